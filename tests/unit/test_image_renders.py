"""The committed images/NAME.Dockerfile renders for the reference host: fail when stale, lint clean.

Regenerate with `pytest tests/unit --update-golden` (or `envbuilder render images/NAME.yaml
--driver 580.159.04 --gpu "NVIDIA H200" --print > images/NAME.Dockerfile`), then review the diff.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_golden import HADOLINT_CONFIG, ROOT, compare_or_update, hadolint

from envbuilder.image.render import render_dockerfile

# The reference host of the committed renders (images/README.md says the same).
REFERENCE_DRIVER = "580.159.04"
REFERENCE_GPU = "NVIDIA H200"


SPECS = sorted((ROOT / "images").glob("*.yaml"))


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_committed_image_renders_are_fresh(
    spec_file: Path, update_golden: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from envbuilder.cli.render_cmd import prepare

    monkeypatch.chdir(ROOT)
    rel = spec_file.relative_to(ROOT)
    s, stack, options = prepare(rel, driver=REFERENCE_DRIVER, gpus=(REFERENCE_GPU,))
    text = render_dockerfile(s, stack, options)
    compare_or_update(spec_file.with_suffix(".Dockerfile"), text, update_golden)
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(text, encoding="utf-8")
    result = subprocess.run(
        [hadolint(), "--no-color", "--config", str(HADOLINT_CONFIG), str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
