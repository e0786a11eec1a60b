"""`--runtime podman` for real (Debian's podman 4.3, scripts/podman.sh): the bundled torch CPU image
built by `podman build` into Podman's own store, certified on the CPU path and run under Podman,
the certificate binding Podman's image ID; the refusals: an image without a certificate is not
run (exit 12), and without podman every command says so in one line (exit 24).

On these sandboxed machines Podman's containers need the test-only containers.conf scripts/podman.sh
writes (its runtime drops the rlimits the sandbox refuses); users' machines do not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import BASE_IMAGE, STATE, envbuilder_cli, unavailable, write_spec

from envbuilder.certify.jit_cache import CACHE_ENV, volume_name
from envbuilder.engine.container import ContainerSpec, Volume
from envbuilder.errors import NoGpuError
from envbuilder.image.metadata import JIT_CACHE_DIR
from envbuilder.runtime.podman import PodmanEngine

pytestmark = pytest.mark.podman

HELLO = "print('hello from podman')"
CONTAINERS_CONF = STATE / "podman" / "containers.conf"


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=600, check=False, stdin=subprocess.DEVNULL
    )


@pytest.fixture(scope="module")
def podman_ready() -> Iterator[None]:
    """Podman with the local base image in its store, and (where scripts/podman.sh wrote it) the
    test-only containers.conf for every podman this module starts, envbuilder's included."""
    if shutil.which("podman") is None:
        unavailable("podman is not installed")
    with pytest.MonkeyPatch.context() as mp:
        if CONTAINERS_CONF.is_file():
            mp.setenv("CONTAINERS_CONF", str(CONTAINERS_CONF))
        if podman("image", "exists", BASE_IMAGE).returncode != 0:
            unavailable(f"{BASE_IMAGE} is not in Podman's store (scripts/podman.sh loads it)")
        yield


@pytest.fixture(scope="module")
def certified(
    podman_ready: None, wheelhouse: Path, run_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, object], dict[str, object]]]:
    """(tag, build summary, certificate): the CPU image built by `envbuilder build --runtime
    podman` and certified by `envbuilder certify --runtime podman` (the full CPU path), into a
    private data folder. The image is removed from Podman's store at the end."""
    work = tmp_path_factory.mktemp("podman-it")
    tag = f"envbuilder-it/podman:{run_id}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVBUILDER_DATA_DIR", str(work / "data"))
        spec = write_spec(work / "images", "podman-it")
        try:
            built = envbuilder_cli(
                "build", str(spec.path), "--runtime", "podman", "--cpu", "--base-image", BASE_IMAGE,
                "--wheelhouse", str(wheelhouse), "--tag", tag, "--lock-out", str(work / "lock.json"),
                "--json",
            )  # fmt: skip
            assert built.returncode == 0, built.stderr[-3000:]
            cert = envbuilder_cli(
                "certify", tag, "--runtime", "podman", "--gpu-access", "none", "--json",
                "--out", str(work / "cert.json"),
            )  # fmt: skip
            assert cert.returncode == 0, cert.stderr[-3000:]
            yield tag, json.loads(built.stdout), json.loads(cert.stdout)
        finally:  # the image with every tag it got (build adds envbuilder/podman-it:<stack-id>)
            found = podman("image", "inspect", "--format", "{{.Id}}", tag)
            if found.returncode == 0:
                podman("rmi", "--force", found.stdout.strip())


def test_build_lands_in_podmans_store_and_the_certificate_binds_its_id(
    certified: tuple[str, dict[str, object], dict[str, object]],
) -> None:
    tag, built, cert = certified
    inspected = json.loads(podman("image", "inspect", "--format", "json", tag).stdout)[0]
    podman_id = "sha256:" + inspected["Id"]  # Podman prints the config digest without sha256:
    assert built["image_id"] == podman_id
    assert inspected["Config"]["Labels"]["io.envbuilder.lock-hash"]  # the rendered Dockerfile's labels
    assert cert["image"]["id"] == podman_id and cert["verdict"] == "certified-cpu-only"  # type: ignore[index]
    run = cert["run"]
    assert isinstance(run, dict) and run["docker_args"][:3] == ["podman", "run", "--rm"]
    assert run["docker_args"][-1] != podman_id and podman_id in run["docker_args"]
    assert run["host_cpu"]["cpu_seconds"] > 0  # podman stats read the container's cgroup


def test_run_under_podman_checks_the_certificate_then_runs(
    certified: tuple[str, dict[str, object], dict[str, object]],
) -> None:
    tag, _, cert = certified
    res = envbuilder_cli("run", "--runtime", "podman", tag, "--", "python3", "-c", HELLO)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "hello from podman"
    short = str(cert["content_hash"]).removeprefix("sha256:")[:12]
    assert f"certificate {short} covers this run (certified-cpu-only)" in res.stderr
    failing = envbuilder_cli("run", "--runtime", "podman", tag, "--", "python3", "-c", "raise SystemExit(7)")
    assert failing.returncode == 7  # the job's own exit code, passed through


def test_the_jit_cache_volume_under_podman_is_the_images_users_and_kept(
    certified: tuple[str, dict[str, object], dict[str, object]],
) -> None:
    """As test_run_docker.py's twin, through Podman's `--mount type=volume` (podman_flags): the
    volume starts as the image's folder (uid 1000's) and keeps what a container wrote there."""
    tag, built, _ = certified
    image_id = str(built["image_id"])
    vol = Volume(name=volume_name(image_id, "run"), target=JIT_CACHE_DIR)
    eng = PodmanEngine()
    write = f'touch "${CACHE_ENV}/entry"; id -u'
    env = {CACHE_ENV: JIT_CACHE_DIR}
    try:
        first = eng.run(
            ContainerSpec(image=tag, command=("sh", "-c", write), env=env, volumes=(vol,)), timeout_s=120
        )
        assert first.exit_code == 0 and first.stdout.split() == ["1000"], first.stderr[-2000:]
        second = eng.run(
            ContainerSpec(image=tag, command=("ls", "-ln", JIT_CACHE_DIR), volumes=(vol,)), timeout_s=120
        )
        (line,) = [x for x in second.stdout.splitlines() if x.endswith(" entry")]
        assert line.split()[2:4] == ["1000", "1000"]
    finally:
        podman("volume", "rm", "--force", vol.name)


def test_run_refuses_an_image_without_a_certificate(podman_ready: None, tmp_path: Path) -> None:
    marker = "this must not run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "empty-store"))
        res = envbuilder_cli("run", "--runtime", "podman", BASE_IMAGE, "--", "echo", marker)
    assert res.returncode == 12, res.stderr
    base_id = (
        "sha256:" + json.loads(podman("image", "inspect", "--format", "json", BASE_IMAGE).stdout)[0]["Id"]
    )
    assert f"refusing to run: no certificate for image {base_id}" in res.stderr
    assert marker not in res.stdout
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("command", ["build", "certify", "run"])
def test_without_podman_one_line_and_exit_24(command: str, tmp_path: Path) -> None:
    """No podman (ENVBUILDER_PODMAN names a program that is not there): one error line, a hint,
    the ContainerRuntimeError exit code, no traceback."""
    args = {
        "build": (
            "build",
            str(write_spec(tmp_path / "images", "no-podman").path),
            "--runtime",
            "podman",
            "--cpu",
        ),
        "certify": ("certify", BASE_IMAGE, "--runtime", "podman", "--gpu-access", "none"),
        "run": ("run", "--runtime", "podman", BASE_IMAGE, "--", "true"),
    }[command]
    missing = tmp_path / "no-podman"
    res = envbuilder_cli(*args, env={"ENVBUILDER_PODMAN": str(missing), "ENVBUILDER_DATA_DIR": str(tmp_path)})
    assert res.returncode == 24, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("envbuilder: error:")]
    assert errors == [
        f"envbuilder: error: Podman is not installed (ENVBUILDER_PODMAN={missing} is not an executable)"
    ]
    assert "hint: install Podman" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "images" / "no-podman.lock.json").exists()


def test_a_cdi_device_podman_cannot_resolve_is_no_gpu(podman_ready: None, run_id: str) -> None:
    """The CDI path through real Podman: a device no spec in /etc/cdi or /var/run/cdi defines
    (a vendor name no host has) is refused at start, as exit 5 with the hint to write the spec,
    and the container is removed."""
    name = f"envbuilder-job-cdi-{run_id}"
    spec = ContainerSpec(
        image=BASE_IMAGE, command=("true",), cdi_devices=("envbuilder.test/none=all",), name=name
    )
    with pytest.raises(NoGpuError) as err:
        PodmanEngine().run(spec)
    assert "unresolvable CDI devices envbuilder.test/none=all" in err.value.message
    assert err.value.exit_code == 5 and "cdi-spec" in (err.value.hint or "")
    assert podman("container", "exists", name).returncode == 1  # removed


def test_an_image_keeps_its_id_between_docker_and_podman(podman_ready: None) -> None:
    """scripts/podman.sh moved the base image with `docker save | podman load`: both stores give
    it the same ID (the config digest), which is what certificates bind; envbuilder reads
    Podman's (printed without sha256:) in Docker's form."""
    docker = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", BASE_IMAGE],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if docker.returncode != 0:
        unavailable(f"{BASE_IMAGE} is not in Docker's store: {docker.stderr.strip()[:200]}")
    raw = podman("image", "inspect", "--format", "{{.Id}}", BASE_IMAGE).stdout.strip()
    assert not raw.startswith("sha256:")
    info = PodmanEngine().inspect_image(BASE_IMAGE)
    assert info is not None and info.id == docker.stdout.strip() == f"sha256:{raw}"
    assert BASE_IMAGE in info.tags  # shown without Podman's localhost/
