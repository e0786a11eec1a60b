"""Issue 18, defect 6, with the real BuildKit client: a secret whose path holds a comma (and a
`src=` of its own) reaches docker's CSV-parsed `--secret` quoted, so docker reads the file that
envbuilder checked, not the decoy the unquoted flag would name. The build asserts which file it
got inside the RUN step; --no-cache, since BuildKit's cache key does not cover a secret's bytes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from envbuilder.engine import BuildSecret, DockerEngine
from envbuilder.engine.buildkit import buildkit_build, find_buildkit_cli, secret_flag
from envbuilder.errors import BuildFailedError

pytestmark = pytest.mark.docker


def _paths(tmp_path: Path) -> tuple[Path, Path]:
    """The real file, in a folder named `certs,src=decoy`, and the decoy `decoy/ca.pem` that an
    unquoted `id=probe,src=TMP/certs,src=decoy/ca.pem` names last (docker's last src= wins, read
    from the client's folder, here tmp_path)."""
    decoy = tmp_path / "decoy" / "ca.pem"
    decoy.parent.mkdir()
    decoy.write_text("wrong\n")
    real = tmp_path / "certs,src=decoy" / "ca.pem"
    real.parent.mkdir()
    real.write_text("right\n")
    return real, decoy


def _build(tmp_path: Path, base_image: str, run_id: str, flag: str | None, secret: BuildSecret) -> str:
    (tmp_path / "Dockerfile").write_text(
        f"FROM {base_image}\n"
        f"RUN --mount=type=secret,id=probe,required=true echo {run_id} && "
        'echo "got $(cat /run/secrets/probe)" && test "$(cat /run/secrets/probe)" = right\n'
    )
    if flag is None:
        result = buildkit_build(
            find_buildkit_cli(), tmp_path, tmp_path / "Dockerfile", secrets=[secret], no_cache=True
        )
        return result.image_id
    cli = find_buildkit_cli()  # the same client, handed the flag as it was before the fix
    iid = tmp_path / "iid"
    done = subprocess.run(
        [*cli.build_argv(), "--no-cache", "--iidfile", str(iid), "-f", str(tmp_path / "Dockerfile"),
         "--secret", flag, str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "DOCKER_BUILDKIT": "1", "BUILDKIT_PROGRESS": "plain"},
    )  # fmt: skip
    if done.returncode != 0:
        raise BuildFailedError(done.stderr[-2000:])
    return iid.read_text().strip()


def test_docker_reads_the_file_envbuilder_checked_for_a_path_with_a_comma(
    tmp_path: Path, base_image: str, engine: DockerEngine, run_id: str
) -> None:
    real, _decoy = _paths(tmp_path)
    secret = BuildSecret(id="probe", src=real)
    assert secret_flag(secret) == f'id=probe,"src={real}"'
    built: list[str] = []
    try:
        built.append(_build(tmp_path, base_image, run_id, None, secret))  # quoted: the real file
        # What the flag was before (`id=probe,src=PATH` unquoted): docker reads the decoy.
        with pytest.raises(BuildFailedError) as failed:
            built.append(_build(tmp_path, base_image, run_id, f"id=probe,src={real}", secret))
        assert "got wrong" in failed.value.message  # the RUN step ran, and read the decoy
    finally:
        for image_id in built:
            engine.remove_image(image_id, force=True)
