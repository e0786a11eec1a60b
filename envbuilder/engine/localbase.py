"""A Debian base image made on this machine (debootstrap + `docker import`), for builds where no
container registry can be reached: the recipe scripts/services.sh uses for the tests'
base. Its Python and OS are read back from the image made, never assumed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from envbuilder.engine.container import ContainerSpec
from envbuilder.engine.interface import Engine
from envbuilder.errors import BuildFailedError, log_tail

LOCAL_BASE_REPO = "envbuilder/local-base"
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# What the bundled template needs from a base: python3 with venv, and CA certificates.
PACKAGES = ("python3", "python3-venv", "ca-certificates")
_PROBE = (
    "import platform, sys; "
    "osr = dict(l.strip().split('=', 1) for l in open('/etc/os-release') if '=' in l); "
    "print(f'{sys.version_info[0]}.{sys.version_info[1]}', "
    "osr.get('ID', '').strip('\"') + osr.get('VERSION_ID', '').strip('\"'))"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalBase:
    ref: str
    image_id: str
    python: str  # X.Y, read from the image
    os: str  # e.g. debian12, from its /etc/os-release
    made: bool  # False: it was already there


def local_base_ref(suite: str = DEFAULT_SUITE) -> str:
    return f"{LOCAL_BASE_REPO}:{suite}"


def ensure_local_base(
    engine: Engine,
    *,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    on_message: Callable[[str], None] | None = None,
) -> LocalBase:
    """The local base image for `suite`, made when missing, with the Python and OS it carries.

    Raises BuildFailedError (debootstrap missing, not root, debootstrap or import failed: nothing
    is tagged then), DockerUnavailableError.
    """
    say = on_message or (lambda _m: None)
    ref = local_base_ref(suite)
    made = False
    if engine.inspect_image(ref) is None:
        make_local_base(ref, suite=suite, mirror=mirror or DEFAULT_MIRROR, on_message=say)
        made = True
    info = engine.inspect_image(ref)
    if info is None:
        raise BuildFailedError(f"the local base {ref} was imported but is not there")
    python, os_name = probe_base(engine, ref, hint=f"remove it (docker rmi {ref}) so that it is made again")
    return LocalBase(ref=ref, image_id=info.id, python=python, os=os_name, made=made)


def probe_base(engine: Engine, ref: str, *, hint: str) -> tuple[str, str]:
    """The Python (X.Y) and OS (e.g. debian12) a local base image carries, read by running its
    python3. Raises BuildFailedError (no python3, or an answer that is not two words)."""
    res = engine.run(ContainerSpec(image=ref, command=("python3", "-c", _PROBE)), timeout_s=60)
    fields = res.stdout.split()
    if res.exit_code != 0 or len(fields) != 2:
        raise BuildFailedError(
            f"cannot read the Python of the base {ref} (exit {res.exit_code}): {res.stderr[-300:]}",
            hint=hint,
        )
    return fields[0], fields[1]


def make_local_base(ref: str, *, suite: str, mirror: str, on_message: Callable[[str], None]) -> None:
    """debootstrap a minimal `suite` with PACKAGES and `docker import` it as `ref`. The image is
    tagged only when the whole root file system went in. Raises BuildFailedError."""
    debootstrap = shutil.which("debootstrap")
    hint = (
        "install debootstrap (apt-get install debootstrap) and run as root, "
        "or give --base-image REF (an image with python3 and venv)"
    )
    if debootstrap is None:
        raise BuildFailedError(
            "no container registry is reachable and debootstrap is not installed", hint=hint
        )
    if os.geteuid() != 0:
        raise BuildFailedError("no container registry is reachable and debootstrap needs root", hint=hint)
    docker = shutil.which("docker") or "/usr/bin/docker"
    rootfs = Path(tempfile.mkdtemp(prefix="envbuilder-rootfs-"))
    try:
        on_message(f"debootstrap {suite} from {mirror} (about a minute)")
        argv = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            suite,
            str(rootfs),
            mirror,
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildFailedError(
                f"debootstrap {suite} failed (exit {proc.returncode})",
                hint=hint,
                log=log_tail([proc.stdout, proc.stderr]),
            )
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        on_message(f"docker import -> {ref}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            [
                docker, "import",
                "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--change", 'CMD ["/bin/bash"]',
                "-", ref,
            ],
            stdin=tar.stdout, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if tar.stdout is not None:
            tar.stdout.close()
        tar_code = tar.wait()
        if imp.returncode != 0:
            raise BuildFailedError(f"docker import of the local base failed: {imp.stderr.strip()[-300:]}")
        if tar_code != 0:  # the import took a cut-short stream: not a base to build on
            subprocess.run([docker, "rmi", "-f", ref], capture_output=True, check=False)
            raise BuildFailedError(
                f"tar of the debootstrapped {suite} failed (exit {tar_code}); {ref} removed"
            )
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
