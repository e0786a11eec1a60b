"""The CUDA JIT cache kept per image (certify/jit_cache.py): which GPU containers get the image's
volume and CUDA_CACHE_PATH, how the engines (and the file runtimes, as a folder of the user's) are
told, what the harness records of the cache, and that certify hands it to its containers. run's
share: test_run_docker_like.py, test_hpc_runtimes.py (Apptainer, enroot); the volume on real
engines (the image's user owns it, it outlives the container): integration/test_run_docker.py and
test_podman.py."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import pytest
from test_certify import DOCKER, IMAGE, certify, devices_mode, engine

from envbuilder.certify.gpu_access import training_container
from envbuilder.certify.jit_cache import CACHE_ENV, VOLUME_PREFIX, jit_cache_volume, volume_name
from envbuilder.engine import ContainerSpec, Mount, Volume, docker_run_argv
from envbuilder.errors import ContainerRuntimeError
from envbuilder.harness.hostinfo import cuda_jit_cache
from envbuilder.image.metadata import JIT_CACHE_DIR, LABEL_JIT_CACHE, read_metadata
from envbuilder.runtime import AccessChoice, choose_access
from envbuilder.runtime.apptainer import ApptainerRuntime
from envbuilder.runtime.enroot import EnrootRuntime
from envbuilder.runtime.podman import podman_run_argv

DECLARED = dataclasses.replace(IMAGE, labels={**IMAGE.labels, LABEL_JIT_CACHE: JIT_CACHE_DIR})
NONE = AccessChoice(name="none", reason="t")


def gpu(tmp: Path) -> AccessChoice:
    return choose_access(DOCKER, "devices", [devices_mode(tmp)])


def test_a_gpu_container_of_a_declaring_image_gets_its_own_volume(tmp_path: Path) -> None:
    choice = gpu(tmp_path)
    vol = jit_cache_volume(DECLARED, DOCKER, choice, {}, owner="run")
    assert vol == Volume(name=VOLUME_PREFIX + "run-" + "ab" * 32, target=JIT_CACHE_DIR)
    # one per image ID, and certify's is not run's (a job's code must not plant what certify measures)
    assert volume_name("sha256:" + "cd" * 32, "certify") == VOLUME_PREFIX + "certify-" + "cd" * 32
    with pytest.raises(ValueError, match="not 'check'"):
        volume_name(IMAGE.id, "check")
    spec = training_container(DECLARED, choice, ("python3",), env={"A": "1"}, jit_cache="run", host_env={})
    assert spec.volumes == (vol,) and spec.env[CACHE_ENV] == JIT_CACHE_DIR and spec.env["A"] == "1"
    argv = docker_run_argv(spec)
    mount = f"type=volume,source={VOLUME_PREFIX}run-{'ab' * 32},target={JIT_CACHE_DIR}"
    assert argv[argv.index("--mount") + 1] == mount
    assert f"{CACHE_ENV}={JIT_CACHE_DIR}" in argv
    # Podman takes the same flag (its --mount has no volume labels, so none are given)
    podman = podman_run_argv(dataclasses.replace(spec, gpus=None))
    assert podman[podman.index("--mount") + 1] == argv[argv.index("--mount") + 1]


@pytest.mark.parametrize(
    "why",
    ["not asked", "no GPU", "undeclared image", "another folder", "another user", "caller's path", "off"],
)
def test_where_no_volume_is_mounted(why: str, tmp_path: Path) -> None:
    image, choice, env, user = DECLARED, gpu(tmp_path), {}, None
    asked: str | None = "run"
    if why == "not asked":
        asked = None
    elif why == "no GPU":
        choice = NONE
    elif why == "undeclared image":
        image = IMAGE
    elif why == "another folder":  # a label is the image's say; only the one folder is used
        image = dataclasses.replace(IMAGE, labels={**IMAGE.labels, LABEL_JIT_CACHE: "/etc"})
        assert read_metadata(image).jit_cache is None
        assert any(LABEL_JIT_CACHE in p for p in read_metadata(image).problems)
    elif why == "another user":  # `run --user`: the folder is the image user's, not theirs
        user = "4242:4242"
    elif why == "caller's path":
        env = {CACHE_ENV: "/data/jit"}
    else:
        env = {"CUDA_CACHE_DISABLE": "1"}
    spec = training_container(image, choice, ("python3",), env=env, jit_cache=asked, user=user, host_env={})
    assert spec.volumes == ()
    assert spec.env.get(CACHE_ENV) == env.get(CACHE_ENV)  # the caller's own, or none
    assert "--mount" not in docker_run_argv(spec)
    assert spec.user == user


def test_the_file_runtimes_keep_a_volume_in_a_folder_of_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    choice = gpu(tmp_path)
    apptainer, enroot = ApptainerRuntime(binary="/bin/true"), EnrootRuntime(binary="/bin/true")
    for rt in (apptainer, enroot, DOCKER):
        assert rt.volumes is True
        assert jit_cache_volume(DECLARED, rt, choice, {}, owner="run") == Volume(
            name=volume_name(DECLARED.id, "run"), target=JIT_CACHE_DIR
        )
    spec = ContainerSpec(
        image="/x.sif",
        command=("true",),
        mounts=(Mount(source="/d", target="/data", read_only=True),),
        volumes=(Volume(name="v", target="/c"),),
    )
    folder = tmp_path / "cache" / "volumes" / "v"
    argv = apptainer.argv(spec)
    assert argv[argv.index("--bind") :][:4] == ["--bind", "/d:/data:ro", "--bind", f"{folder}:/c"]
    # the job runs as the calling user: the folder is theirs alone (nobody else plants kernels in it)
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    (folder / "kept").write_text("x")
    argv = enroot.argv(spec)  # the same folder again, as it was
    assert argv[argv.index("--mount") :][:4] == [
        "--mount",
        "/d:/data:none,bind,ro",
        "--mount",
        f"{folder}:/c:none,bind",
    ]
    assert (folder / "kept").read_text() == "x"
    # under Slurm pyxis starts the job on a node: a folder made here would not be the node's
    with pytest.raises(ContainerRuntimeError, match=r"takes no named volumes under Slurm \(v\)"):
        enroot.slurm_argv(spec)
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "a-file"))
    with pytest.raises(ContainerRuntimeError, match="cannot make the folder of volume v") as exc:
        apptainer.argv(spec)
    assert "ENVBUILDER_CACHE_DIR" in (exc.value.hint or "")


def test_a_volume_is_a_plain_name_at_an_absolute_path() -> None:
    with pytest.raises(ValueError, match="not a volume name"):
        Volume(name="../x", target="/c")
    with pytest.raises(ValueError, match="not a volume name"):
        Volume(name="a,source=/etc", target="/c")  # nothing can ride into --mount's value
    with pytest.raises(ValueError, match="must be absolute"):
        Volume(name="v", target="c")


def test_certify_mounts_the_volume_in_its_gpu_container_unless_told_not_to() -> None:
    eng = engine(DECLARED)
    certify(eng)
    (harness,) = [s for s in eng.runs if s.purpose == "certify"]
    assert harness.volumes == (Volume(name=VOLUME_PREFIX + "certify-" + "ab" * 32, target=JIT_CACHE_DIR),)
    assert harness.env[CACHE_ENV] == JIT_CACHE_DIR
    eng = engine(DECLARED)
    certify(eng, jit_cache=False)
    (harness,) = [s for s in eng.runs if s.purpose == "certify"]
    assert harness.volumes == () and CACHE_ENV not in harness.env


def test_the_harness_records_the_cache_it_found(tmp_path: Path) -> None:
    cache = tmp_path / "jit"
    (cache / "a").mkdir(parents=True)
    (cache / "index").write_bytes(b"x" * 10)
    (cache / "a" / "k").write_bytes(b"y" * 5)
    rec = cuda_jit_cache({CACHE_ENV: str(cache)})
    assert rec == {"path": str(cache), "set_by": CACHE_ENV, "disabled": False, "files": 2, "bytes": 15}
    home = tmp_path / "home"
    rec = cuda_jit_cache({"HOME": str(home), "CUDA_CACHE_DISABLE": "1"})
    assert rec == {
        "path": str(home / ".nv" / "ComputeCache"),
        "set_by": "default",
        "disabled": True,
        "files": 0,
        "bytes": 0,
    }
