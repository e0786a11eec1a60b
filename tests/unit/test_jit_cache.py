"""The CUDA JIT cache and the frameworks' compile caches kept per image (certify/jit_cache.py):
which GPU containers get the image's volume, CUDA_CACHE_PATH and each framework's variable, how
the engines (and the file runtimes, as a folder of the user's) are told, what the harness records
of the caches, and that certify hands them to its containers. run's share:
test_run_docker_like.py, test_hpc_runtimes.py (Apptainer, enroot); the volume on real engines (the
image's user owns it, it outlives the container): integration/test_run_docker.py and
test_podman.py."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import pytest
from test_certify import DOCKER, IMAGE, certify, devices_mode, engine

from envbuilder.certify.gpu_access import training_container
from envbuilder.certify.jit_cache import CACHE_ENV, VOLUME_PREFIX, cache_env, jit_cache_volume, volume_name
from envbuilder.engine import ContainerSpec, Mount, Volume, docker_run_argv
from envbuilder.errors import ContainerRuntimeError
from envbuilder.frameworks import ALL_FRAMEWORK_MODULES
from envbuilder.harness.hostinfo import compile_caches, cuda_jit_cache
from envbuilder.image.metadata import JIT_CACHE_DIR, LABEL_JIT_CACHE, read_metadata
from envbuilder.runtime import AccessChoice, choose_access
from envbuilder.runtime.apptainer import ApptainerRuntime
from envbuilder.runtime.enroot import EnrootRuntime
from envbuilder.runtime.podman import podman_run_argv

DECLARED = dataclasses.replace(IMAGE, labels={**IMAGE.labels, LABEL_JIT_CACHE: JIT_CACHE_DIR})
NONE = AccessChoice(name="none", reason="t")
# every framework's compile cache, each in its folder of the volume (frameworks/NAME.py COMPILE_CACHES)
FRAMEWORK_CACHES = {
    "TORCHINDUCTOR_CACHE_DIR": f"{JIT_CACHE_DIR}/torchinductor",
    "TRITON_CACHE_DIR": f"{JIT_CACHE_DIR}/triton",
    "JAX_COMPILATION_CACHE_DIR": f"{JIT_CACHE_DIR}/jax",
}


def gpu(tmp: Path) -> AccessChoice:
    return choose_access(DOCKER, "devices", [devices_mode(tmp)])


def test_a_gpu_container_of_a_declaring_image_gets_its_own_volume(tmp_path: Path) -> None:
    choice = gpu(tmp_path)
    cache = jit_cache_volume(DECLARED, DOCKER, choice, {}, owner="run")
    assert cache is not None
    vol = cache.volume
    assert vol == Volume(name=VOLUME_PREFIX + "run-" + "ab" * 32, target=JIT_CACHE_DIR)
    assert cache.env == {CACHE_ENV: JIT_CACHE_DIR, **FRAMEWORK_CACHES}
    # one per image ID, and certify's is not run's (a job's code must not plant what certify measures)
    assert volume_name("sha256:" + "cd" * 32, "certify") == VOLUME_PREFIX + "certify-" + "cd" * 32
    with pytest.raises(ValueError, match="not 'check'"):
        volume_name(IMAGE.id, "check")
    spec = training_container(DECLARED, choice, ("python3",), env={"A": "1"}, jit_cache="run", host_env={})
    assert spec.volumes == (vol,) and spec.env["A"] == "1"
    assert {k: spec.env[k] for k in cache.env} == cache.env
    argv = docker_run_argv(spec)
    mount = f"type=volume,source={VOLUME_PREFIX}run-{'ab' * 32},target={JIT_CACHE_DIR}"
    assert argv[argv.index("--mount") + 1] == mount
    assert f"{CACHE_ENV}={JIT_CACHE_DIR}" in argv
    # Podman takes the same flag (its --mount has no volume labels, so none are given)
    podman = podman_run_argv(dataclasses.replace(spec, gpus=None))
    assert podman[podman.index("--mount") + 1] == argv[argv.index("--mount") + 1]


@pytest.mark.parametrize(
    "why", ["not asked", "no GPU", "undeclared image", "another folder", "another user", "all the caller's"]
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
    else:  # every cache's variable is the caller's: nothing is left to keep in the volume
        env = {"CUDA_CACHE_DISABLE": "1", **dict.fromkeys(FRAMEWORK_CACHES, "/data/c")}
    spec = training_container(image, choice, ("python3",), env=env, jit_cache=asked, user=user, host_env={})
    assert spec.volumes == ()
    for var in (CACHE_ENV, *FRAMEWORK_CACHES):
        assert spec.env.get(var) == env.get(var)  # the caller's own, or none
    assert "--mount" not in docker_run_argv(spec)
    assert spec.user == user


@pytest.mark.parametrize(
    ("callers", "left"),
    [
        ({CACHE_ENV: "/data/jit"}, FRAMEWORK_CACHES),
        ({"CUDA_CACHE_DISABLE": "1"}, FRAMEWORK_CACHES),
        ({"TORCHINDUCTOR_CACHE_DIR": "/data/ind"}, {CACHE_ENV: JIT_CACHE_DIR, **FRAMEWORK_CACHES}),
    ],
)
def test_a_variable_the_caller_sets_is_theirs_and_the_other_caches_still_use_the_volume(
    callers: dict[str, str], left: dict[str, str], tmp_path: Path
) -> None:
    spec = training_container(
        DECLARED, gpu(tmp_path), ("python3",), env=callers, jit_cache="run", host_env={}
    )
    assert [v.name for v in spec.volumes] == [volume_name(DECLARED.id, "run")]
    expected = {k: v for k, v in left.items() if k not in callers}
    assert {k: spec.env[k] for k in expected} == expected
    assert {k: spec.env[k] for k in callers} == callers  # never overwritten
    assert not ({CACHE_ENV, *FRAMEWORK_CACHES} - set(left) - set(callers)) & set(spec.env)  # disabled: unset


def test_each_frameworks_cache_has_its_own_folder_and_a_documented_variable() -> None:
    caches = [c for fw in ALL_FRAMEWORK_MODULES for c in fw.COMPILE_CACHES]
    assert len({c.env for c in caches}) == len(caches) == len({c.folder for c in caches})
    assert all(c.source.startswith("https://") and "/" not in c.folder for c in caches)
    assert cache_env("/c", {}) == {CACHE_ENV: "/c", **{c.env: f"/c/{c.folder}" for c in caches}}


def test_the_file_runtimes_keep_a_volume_in_a_folder_of_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    choice = gpu(tmp_path)
    apptainer, enroot = ApptainerRuntime(binary="/bin/true"), EnrootRuntime(binary="/bin/true")
    for rt in (apptainer, enroot, DOCKER):
        assert rt.volumes is True
        cache = jit_cache_volume(DECLARED, rt, choice, {}, owner="run")
        assert cache is not None
        assert cache.volume == Volume(name=volume_name(DECLARED.id, "run"), target=JIT_CACHE_DIR)
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
    assert {k: harness.env[k] for k in FRAMEWORK_CACHES} == FRAMEWORK_CACHES
    eng = engine(DECLARED)
    certify(eng, jit_cache=False)
    (harness,) = [s for s in eng.runs if s.purpose == "certify"]
    assert harness.volumes == () and not {CACHE_ENV, *FRAMEWORK_CACHES} & set(harness.env)


def test_the_harness_records_the_cache_it_found(tmp_path: Path) -> None:
    cache = tmp_path / "jit"
    (cache / "a").mkdir(parents=True)
    (cache / "index").write_bytes(b"x" * 10)
    (cache / "a" / "k").write_bytes(b"y" * 5)
    # the frameworks' caches in their folders below it are not the driver's: counted apart
    inductor = cache / "torchinductor"
    (inductor / "fxgraph").mkdir(parents=True)
    (inductor / "fxgraph" / "g").write_bytes(b"z" * 7)
    env = {
        CACHE_ENV: str(cache),
        "TORCHINDUCTOR_CACHE_DIR": str(inductor),
        "TRITON_CACHE_DIR": str(cache / "triton"),
    }
    rec = cuda_jit_cache(env)
    assert rec == {"path": str(cache), "set_by": CACHE_ENV, "disabled": False, "files": 2, "bytes": 15}
    assert compile_caches(env) == {
        "TORCHINDUCTOR_CACHE_DIR": {"path": str(inductor), "files": 1, "bytes": 7},
        "TRITON_CACHE_DIR": {"path": str(cache / "triton"), "files": 0, "bytes": 0},  # not made yet
    }
    assert compile_caches({}) == {}  # none was given: nothing to say
    home = tmp_path / "home"
    rec = cuda_jit_cache({"HOME": str(home), "CUDA_CACHE_DISABLE": "1"})
    assert rec == {
        "path": str(home / ".nv" / "ComputeCache"),
        "set_by": "default",
        "disabled": True,
        "files": 0,
        "bytes": 0,
    }
