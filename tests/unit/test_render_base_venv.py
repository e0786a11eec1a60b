"""--base-venv: install into the environment a base image already carries (no second venv)."""

from __future__ import annotations

import pytest
from render_cases import TORCH_BUNDLED_CU130, instructions, spec

from envbuilder.errors import SpecError
from envbuilder.image.render import RenderOptions, render_dockerfile


def test_base_venv_reuses_the_base_environment() -> None:
    options = RenderOptions(base_image="gpu-host-env:latest", base_venv="/opt/torch/.venv")
    text = render_dockerfile(spec(), TORCH_BUNDLED_CU130, options)
    assert "-m venv" not in text
    assert 'PATH="/opt/torch/.venv/bin:${PATH}"' in text
    assert "FROM gpu-host-env:latest" in text
    default = render_dockerfile(spec(), TORCH_BUNDLED_CU130, RenderOptions())
    # Exactly one instruction fewer: the RUN that created /opt/venv.
    assert len(instructions(default)) - len(instructions(text)) == 1


@pytest.mark.parametrize(
    "bad", ["relative/venv", "/opt/venv; rm -rf /", "/opt/$HOME", "/opt/a b", "/opt/\nRUN x"]
)
def test_hostile_base_venv_is_refused(bad: str) -> None:
    with pytest.raises(SpecError, match="refused base venv"):
        render_dockerfile(spec(), TORCH_BUNDLED_CU130, RenderOptions(base_venv=bad))
