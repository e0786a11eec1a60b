"""A stack resolved with --forward-compat (resolve/forward_compat.py) renders the cuda-compat
package and the driver below which the entrypoint uses it; other stacks render neither, and a
lock whose forward_compat values are not a package and a driver is refused before the template."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from render_cases import TORCH_BUNDLED_CU130, TORCH_SYSTEM_CU126, spec

from envbuilder.errors import SpecError
from envbuilder.image.render import render_dockerfile
from envbuilder.image.spec import load_spec
from envbuilder.resolve.model import Stack

FWD = replace(TORCH_SYSTEM_CU126, forward_compat=("cuda-compat-12-6", "560.35.05"), min_driver="470")


def test_forward_compat_installs_the_package_when_missing_and_tells_the_entrypoint() -> None:
    text = render_dockerfile(spec(strategy="system-cuda"), FWD)
    assert "RUN test -e /usr/local/cuda/compat/libcuda.so.1 \\\n" in text
    assert "apt-get install -y --no-install-recommends cuda-compat-12-6 \\\n" in text
    assert 'ENV ENVBUILDER_COMPAT_DRIVER="560.35.05"\n' in text
    assert 'ENV ENVBUILDER_MIN_DRIVER="470"\n' in text
    assert text.index("cuda-compat-12-6") < text.index("ENTRYPOINT")


def test_other_stacks_render_no_compat() -> None:
    for stack, s in ((TORCH_SYSTEM_CU126, spec(strategy="system-cuda")), (TORCH_BUNDLED_CU130, spec())):
        text = render_dockerfile(s, stack)
        assert "cuda-compat" not in text and "ENVBUILDER_COMPAT_DRIVER" not in text


@pytest.mark.parametrize(
    "value",
    [
        ("cuda-compat-12-6; rm -rf /", "560.35.05"),
        ("cuda-compat-12-6", "560.35.05\nRUN id"),
        ("libcuda", "560"),
    ],
)
def test_a_forged_forward_compat_is_refused(value: tuple[str, str]) -> None:
    with pytest.raises(SpecError, match="refused forward_compat"):
        render_dockerfile(spec(strategy="system-cuda"), replace(FWD, forward_compat=value))


def test_forward_compat_on_a_bundled_stack_is_refused() -> None:
    stack = replace(TORCH_BUNDLED_CU130, forward_compat=("cuda-compat-13-0", "580.65.06"))
    with pytest.raises(SpecError, match="not a system-cuda stack"):
        render_dockerfile(spec(), stack)


def test_the_stack_json_round_trips_and_omits_it_when_unset() -> None:
    doc = FWD.to_dict()
    assert doc["forward_compat"] == {"package": "cuda-compat-12-6", "driver": "560.35.05"}
    assert Stack.from_dict(doc) == FWD
    assert "forward_compat" not in TORCH_SYSTEM_CU126.to_dict()
    assert Stack.from_dict(TORCH_SYSTEM_CU126.to_dict()) == TORCH_SYSTEM_CU126


def test_a_spec_asks_for_forward_compat_and_its_request_carries_it(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text("name: train\nframework: torch\nstrategy: system-cuda\nforward_compat: true\n")
    parsed = load_spec(path)
    assert parsed.forward_compat and parsed.to_request().forward_compat
    assert parsed.to_dict()["forward_compat"] is True
    path.write_text("name: train\nframework: torch\n")
    assert "forward_compat" not in load_spec(path).to_dict()  # earlier specs keep their hash
    path.write_text("name: train\nframework: torch\nforward_compat: 'yes'\n")
    with pytest.raises(SpecError, match="field 'forward_compat'"):
        load_spec(path)
