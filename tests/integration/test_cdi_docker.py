"""CDI against a real Docker 26 daemon (started by scripts/services.sh beside the system one): a
spec written by envbuilder's CDI writer for a fake driver host (character devices standing in for
/dev/nvidia*, a real shared library standing in for libcuda, a real ELF program for nvidia-smi) is
read by the daemon, and containers get the devices, the mounts and the environment it names,
through the SDK path certify uses, through `envbuilder run --gpu-access cdi`, and doctor reads the
daemon's CDI settings. No GPU is involved: this is the plumbing; benchmarks/gpu/cdi_proof.sh is the
proof on the H200."""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from conftest import BASE_IMAGE, Docker26, envbuilder_cli, unavailable

from envbuilder.engine import ContainerSpec, DockerEngine
from envbuilder.errors import DockerUnavailableError
from envbuilder.host import CommandResult, GpuInfo, HostReport
from envbuilder.host.cdi import build_cdi_spec, write_cdi_spec
from envbuilder.host.driver_files import find_driver_files

pytestmark = pytest.mark.docker

DRIVER = "580.159.04"
UUID = "GPU-3f1c9e0a-7b2d-4c5e-9a81-0d6f2b4e8c17"
LIB = "/usr/lib/x86_64-linux-gnu"


@dataclass(frozen=True)
class CdiHost:
    d26: Docker26
    spec: Path
    zlib_version: str  # what the stand-in libcuda answers to zlibVersion()


def _fake_driver_host(root: Path) -> tuple[Path, str]:
    """/dev/nvidia0, nvidiactl, nvidia-uvm as /dev/null twins (c 1 3); libcuda.so.<DRIVER> is a
    copy of this machine's libz (a real shared object the container's loader must find); nvidia-smi
    is a copy of printenv (a real ELF program). Returns the root and the zlib version."""
    dev = root / "dev"
    dev.mkdir(parents=True)
    try:
        for name in ("nvidia0", "nvidiactl", "nvidia-uvm"):
            os.mknod(dev / name, 0o666 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        unavailable("making character devices for the fake driver host needs root")
    info = root / "proc/driver/nvidia/gpus/0000:00:06.0/information"
    info.parent.mkdir(parents=True)
    info.write_text(f"Model: \t\t NVIDIA H200\nGPU UUID: \t {UUID}\nDevice Minor: \t 0\n")
    libs = root / "usr/local/nvidia/lib64"
    libs.mkdir(parents=True)
    zlib = Path(os.path.realpath(f"{LIB}/libz.so.1"))
    shutil.copyfile(zlib, libs / f"libcuda.so.{DRIVER}")
    (libs / "libcuda.so.1").symlink_to(f"libcuda.so.{DRIVER}")
    (libs / "libcuda.so").symlink_to("libcuda.so.1")
    bin_dir = root / "usr/local/nvidia/bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2("/usr/bin/printenv", bin_dir / "nvidia-smi")
    z = ctypes.CDLL(str(zlib))
    z.zlibVersion.restype = ctypes.c_char_p
    return root, z.zlibVersion().decode()


@pytest.fixture(scope="module")
def cdi_host(docker26: Docker26, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CdiHost]:
    """The spec in the daemon's CDI folder while this module runs (one test session at a time:
    two specs defining nvidia.com/gpu=0 would conflict)."""
    root, zlib_version = _fake_driver_host(tmp_path_factory.mktemp("cdi-host"))
    listing = (
        f"3 libs found in cache `/etc/ld.so.cache'\n"
        f"\tlibcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1\n"
        f"\tlibcuda.so (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so\n"
        f"\tlibz.so.1 (libc6,x86-64) => {LIB}/libz.so.1\n"
    )

    def ldconfig(argv: object, timeout: float) -> CommandResult:
        return CommandResult(returncode=0, stdout=listing, stderr="")

    gpu = GpuInfo(index=0, name="NVIDIA H200", uuid=UUID, cc="9.0", brand="nvidia")
    report = HostReport(source="nvml", driver=DRIVER, cuda_driver="13.0", gpus=(gpu,))
    files = find_driver_files(
        report, run=ldconfig, which=lambda n: "ldconfig" if n == "ldconfig" else None, env={}, root=root,
        machine="x86_64",
    )  # fmt: skip
    assert not isinstance(files, str), files
    spec = docker26.cdi_dir / "nvidia.yaml"
    with (docker26.cdi_dir.parent / "cdi.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        write_cdi_spec(build_cdi_spec(files, root=root, machine="x86_64"), spec)
        try:
            yield CdiHost(d26=docker26, spec=spec, zlib_version=zlib_version)
        finally:
            spec.unlink(missing_ok=True)


# What a container given nvidia.com/gpu=all must see: the nodes, the library found by the loader
# without any ldconfig cache entry (dlopen by SONAME from the multiarch folder), nvidia-smi at
# /usr/bin, and the spec's environment.
PROBE = (
    "test -c /dev/nvidia0 && test -c /dev/nvidiactl && test -c /dev/nvidia-uvm && "
    "echo cache-entries=$(ldconfig -p | grep -c libcuda); "
    "python3 -c \"import ctypes; l = ctypes.CDLL('libcuda.so.1'); l.zlibVersion.restype = ctypes.c_char_p; "
    "print('libcuda.so.1 says', l.zlibVersion().decode())\"; "
    "nvidia-smi TRITON_LIBCUDA_PATH; nvidia-smi NVIDIA_VISIBLE_DEVICES"
)


def _expected(cdi: CdiHost) -> list[str]:
    return ["cache-entries=0", f"libcuda.so.1 says {cdi.zlib_version}", LIB, "void"]


@pytest.fixture
def d26_env(cdi_host: CdiHost, monkeypatch: pytest.MonkeyPatch) -> CdiHost:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{cdi_host.d26.sock}")
    monkeypatch.setenv("ENVBUILDER_DOCKER_CLI", str(cdi_host.d26.cli))
    return cdi_host


def test_the_sdk_path_certify_uses_gets_the_cdi_devices(d26_env: CdiHost) -> None:
    spec = ContainerSpec(image=BASE_IMAGE, command=("sh", "-c", PROBE), cdi_devices=("nvidia.com/gpu=all",))
    res = DockerEngine().run(spec, timeout_s=120)
    assert res.exit_code == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines() == _expected(d26_env)
    one = ContainerSpec(
        image=BASE_IMAGE, command=("test", "-c", "/dev/nvidia0"), cdi_devices=(f"nvidia.com/gpu={UUID}",)
    )
    by_uuid = DockerEngine().run(one, timeout_s=120)
    assert by_uuid.exit_code == 0, by_uuid.stderr


def test_a_gpu_subset_is_handed_in_by_the_per_index_cdi_name(d26_env: CdiHost) -> None:
    """`run --gpus device=0` in cdi mode: the grant names nvidia.com/gpu=0 (not =all), a device the
    spec envbuilder writes (and nvidia-ctk's) defines, and the daemon hands its node in."""
    from envbuilder.certify.gpu_access import training_container
    from envbuilder.engine import ImageInfo
    from envbuilder.host import AccessMode
    from envbuilder.runtime import AccessChoice
    from envbuilder.runtime.gpu_selection import parse_gpus, select_gpus

    gpu = GpuInfo(index=0, name="NVIDIA H200", uuid=UUID, cc="9.0", brand="nvidia")
    report = HostReport(source="nvml", driver=DRIVER, cuda_driver="13.0", gpus=(gpu,))
    chosen = select_gpus(parse_gpus("device=0"), report)
    mode = AccessMode(name="cdi", available=True, detail="spec")
    image = ImageInfo(id=BASE_IMAGE, tags=(), repo_digests=())
    spec = training_container(
        image, AccessChoice(name="cdi", reason="test", mode=mode), ("test", "-c", "/dev/nvidia0"), gpus=chosen
    )
    assert spec.cdi_devices == ("nvidia.com/gpu=0",)
    # without the memlock ulimit, which a nested daemon may refuse (run drops it the same way)
    res = DockerEngine().run(replace(spec, ulimits=()), timeout_s=120)
    assert res.exit_code == 0, res.stderr[-2000:]


def test_the_daemon_refuses_a_device_the_spec_does_not_define(d26_env: CdiHost) -> None:
    spec = ContainerSpec(image=BASE_IMAGE, command=("true",), cdi_devices=("nvidia.com/gpu=7",))
    with pytest.raises(DockerUnavailableError, match=r"nvidia\.com/gpu=7"):
        DockerEngine().run(spec, timeout_s=120)


def test_envbuilder_run_with_gpu_access_cdi(
    d26_env: CdiHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    res = envbuilder_cli(
        "run", "--force", "--gpu-access", "cdi", "--network", "none", BASE_IMAGE, "--", "sh", "-c", PROBE
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-4:] == _expected(d26_env)
    log = [json.loads(line) for line in (tmp_path / "data/runs.jsonl").read_text().splitlines()]
    assert (log[-1]["gpu_access"], log[-1]["outcome"], log[-1]["exit_code"]) == ("cdi", "exited", 0)


def test_doctor_reads_the_daemons_cdi_settings_and_the_spec(d26_env: CdiHost) -> None:
    res = envbuilder_cli("doctor", "--json")
    assert res.returncode == 5, res.stderr[-2000:]  # no GPU on this machine; the report is still printed
    doc = json.loads(res.stdout)
    cdi = next(c for c in doc["checks"] if c["name"] == "cdi")
    assert cdi["status"] == "ok", cdi
    reads = f"the daemon reads CDI specs from {d26_env.d26.cdi_dir}"
    assert cdi["detail"] == f"{reads}; {d26_env.spec} defines nvidia.com/gpu=0,{UUID},all"
    mode = next(m for m in doc["access_modes"] if m["name"] == "cdi")
    assert mode["available"] and mode["docker_args"] == ["--device", "nvidia.com/gpu=all"]
