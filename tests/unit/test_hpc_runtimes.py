"""HPC runtimes: Apptainer's and enroot's exact command lines (exec/start, build/import, pyxis's
srun), `export_image` (a SIF or squashfs appears only complete, with its sidecar), the sidecar's
checks, and `run --runtime apptainer|enroot`: the same certificate checks as a Docker run, then
the runtime's command line. No Apptainer or enroot runs here (tests/integration/test_export_docker.py
builds a real SIF); what starts is recorded, not run."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cert_factory import H200, IMAGE_ID, cert
from click.testing import CliRunner
from fake_engine import FakeEngine

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.jit_cache import CACHE_ENV, volume_name
from envbuilder.cli import cli
from envbuilder.engine import ImageInfo, RunResult
from envbuilder.engine.hpc import Format, Tool, find_tool, read_exported, sidecar_path
from envbuilder.errors import CertificateRefusedError, ContainerRuntimeError, UsageError
from envbuilder.host import GpuInfo, HostReport
from envbuilder.image.metadata import JIT_CACHE_DIR, LABEL_JIT_CACHE
from envbuilder.run.hpc import HpcRunOptions, run_exported
from envbuilder.runtime.apptainer import APPTAINER_CONTAINER_SECURITY, ApptainerRuntime, apptainer_build_argv
from envbuilder.runtime.enroot import EnrootRuntime, enroot_import_argv, pyxis_srun_argv


def export_image(eng: FakeEngine, image: str, out: Path, fmt: Format, tool: Tool, **kw: Any) -> Any:
    """The file runtime of `fmt` exports `image` with `tool` (its binary, or apptainer's image)."""
    if fmt == "sif":
        return ApptainerRuntime(binary=tool.path, image=tool.image).export(image, out, source=eng, **kw)
    return EnrootRuntime(binary=tool.path).export(image, out, source=eng, **kw)


IMAGE = ImageInfo(
    id=IMAGE_ID,
    tags=("team/train:1",),
    repo_digests=("127.0.0.1:5000/team/train@sha256:" + "12" * 32,),
    labels={"io.envbuilder.stack": "{}"},
    env=("PATH=/usr/bin",),
    size=170_000_000,
)


def test_pyxis_srun_and_the_export_commands() -> None:
    assert pyxis_srun_argv("reg#team/train:1", ["python", "t.py"], mounts=[("/d", "/d", True)]) == [
        "srun", "--container-image=reg#team/train:1", "--no-container-mount-home", "--container-workdir=/",
        "--container-mounts=/d:/d:ro", "python", "t.py",
    ]  # fmt: skip
    assert pyxis_srun_argv("x.sqsh", ["true"], gpu=False) == [
        "env", "NVIDIA_VISIBLE_DEVICES=void", "srun", "--container-image=x.sqsh", "--no-container-mount-home",
        "--container-workdir=/", "--container-env=NVIDIA_VISIBLE_DEVICES", "true",
    ]  # fmt: skip
    assert apptainer_build_argv("o.sif", "/t/img.tar") == [
        "apptainer",
        "build",
        "o.sif",
        "docker-archive:///t/img.tar",
    ]
    assert enroot_import_argv("o.sqsh", "team/train:1") == [
        "enroot", "import", "--output", "o.sqsh", "dockerd://team/train:1",
    ]  # fmt: skip


def test_find_tool_says_how_to_get_the_runtime(tmp_path: Path) -> None:
    with pytest.raises(ContainerRuntimeError) as exc:
        EnrootRuntime(binary=str(tmp_path / "nope")).tool()
    assert "is not a file" in exc.value.message and "github.com/NVIDIA/enroot" in (exc.value.hint or "")
    assert exc.value.exit_code == 24
    assert find_tool("apptainer", image="envbuilder-test/apptainer:1.4.5").describe() == (
        "apptainer in the Docker image envbuilder-test/apptainer:1.4.5"
    )


def fake_tool(tmp_path: Path, name: str) -> Tool:
    binary = tmp_path / name
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    return find_tool(name, path=str(binary))


def writes_output(calls: list[list[str]], exit_code: int = 0) -> Any:
    """A `run` that records the argv and writes the file it was told to write (build/import)."""

    def run(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        out = argv[2] if argv[1] == "build" else argv[3]
        if exit_code == 0:
            Path(out).write_bytes(b"hsqs" + b"\0" * 60)
        return subprocess.CompletedProcess(list(argv), exit_code, "", "FATAL: no space left on device\n")

    return run


def test_export_sif_saves_builds_renames_and_writes_the_sidecar(tmp_path: Path) -> None:
    eng = FakeEngine(images={"team/train:1": IMAGE})
    calls: list[list[str]] = []
    tool = fake_tool(tmp_path, "apptainer")
    out = tmp_path / "out" / "train.sif"
    out.parent.mkdir()  # a named output's folder is never created (envbuilder.atomic)
    done = export_image(eng, "team/train:1", out, "sif", tool, run=writes_output(calls))
    assert ("save", IMAGE_ID) in eng.calls
    ((binary, verb, built, archive),) = calls
    assert (binary, verb) == (tool.path, "build") and archive.startswith("docker-archive://")
    assert Path(built).parent.parent == out.parent and not Path(built).exists()  # built beside, renamed
    assert out.read_bytes().startswith(b"hsqs") and done.size == 64
    side = json.loads(sidecar_path(out).read_text())
    assert side["image"]["id"] == IMAGE_ID and side["sha256"] == done.sha256 and side["format"] == "sif"
    assert sorted(p.name for p in out.parent.iterdir()) == ["train.sif", "train.sif.envbuilder.json"]
    back = read_exported(out)
    assert (
        back.image.id == IMAGE_ID and back.image.repo_digests == IMAGE.repo_digests and back.format == "sif"
    )


def test_a_failed_export_leaves_no_file_and_no_sidecar(tmp_path: Path) -> None:
    eng = FakeEngine(images={"team/train:1": IMAGE})
    out = tmp_path / "train.sqsh"
    with pytest.raises(ContainerRuntimeError) as exc:
        export_image(
            eng, "team/train:1", out, "sqsh", fake_tool(tmp_path, "enroot"), run=writes_output([], 1)
        )
    assert "failed (exit 1)" in exc.value.message and "no space left on device" in "\n".join(exc.value.log)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enroot"]  # no file, sidecar or temp folder
    with pytest.raises(UsageError, match="not found locally"):
        export_image(eng, "team/other:1", out, "sqsh", fake_tool(tmp_path, "enroot"), run=writes_output([]))


def test_export_in_an_apptainer_image_runs_it_unconfined_without_network(tmp_path: Path) -> None:
    def job(spec: Any, _stderr: Any) -> RunResult:
        (Path(spec.mounts[0].source) / "image.sif").write_bytes(b"SIF")
        return RunResult(exit_code=0, stdout="", stderr="")

    eng = FakeEngine(images={"team/train:1": IMAGE, "envbuilder-test/apptainer:1.4.5": IMAGE}, job=job)
    done = export_image(
        eng,
        "team/train:1",
        tmp_path / "t.sif",
        "sif",
        find_tool("apptainer", image="envbuilder-test/apptainer:1.4.5"),
    )
    (spec,) = eng.runs
    assert spec.command == ("apptainer", "build", "/work/image.sif", "docker-archive:///work/image.tar")
    assert spec.security_opt == APPTAINER_CONTAINER_SECURITY and spec.network == "none"
    assert done.tool == "apptainer in the Docker image envbuilder-test/apptainer:1.4.5"


def test_a_changed_file_or_a_missing_sidecar_is_refused(tmp_path: Path) -> None:
    eng = FakeEngine(images={"team/train:1": IMAGE})
    out = tmp_path / "t.sif"
    export_image(eng, "team/train:1", out, "sif", fake_tool(tmp_path, "apptainer"), run=writes_output([]))
    out.write_bytes(b"another image")
    with pytest.raises(UsageError, match="is not the file envbuilder exported"):
        read_exported(out)
    sidecar_path(out).unlink()
    with pytest.raises(UsageError, match="no readable sidecar"):
        read_exported(out)


# --------------------------------------------------------------------------- run --runtime


def exported_file(tmp_path: Path, fmt: Format = "sif", image: ImageInfo = IMAGE) -> Path:
    out = tmp_path / f"train.{fmt}"
    tool = fake_tool(tmp_path, "apptainer" if fmt == "sif" else "enroot")
    export_image(
        FakeEngine(images={"team/train:1": image}), "team/train:1", out, fmt, tool, run=writes_output([])
    )
    return out


def host(gpus: tuple[GpuInfo, ...] = (H200,)) -> HostReport:
    return HostReport(
        source="nvml", driver="580.159.04" if gpus else None, cuda_driver="13.0" if gpus else None, gpus=gpus
    )


def go_hpc(
    tmp_path: Path, certificate: Certificate | None, *, gpus: tuple[GpuInfo, ...] = (H200,), **opts: Any
) -> tuple[Any, list[list[str]], list[str]]:
    runtime = opts.pop("runtime", "apptainer")
    path = opts.pop("path", None) or exported_file(tmp_path, "sif" if runtime == "apptainer" else "sqsh")
    launched: list[list[str]] = []
    lines: list[str] = []
    outcome = run_exported(
        HpcRunOptions(
            path=path, runtime=runtime, command=("python", "train.py"), tool=str(tmp_path / runtime), **opts
        ),
        find_certificate=lambda info: (
            [certificate] if certificate is not None and info.id == IMAGE_ID else []
        ),
        probe=lambda: host(gpus),
        say=lines.append,
        log_dir=tmp_path,
        launch=lambda argv: launched.append(list(argv)) or 7,  # type: ignore[func-returns-value]
    )
    return outcome, launched, lines


def run_log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]


def test_a_covered_sif_runs_through_apptainer_exec_nv(tmp_path: Path) -> None:
    outcome, launched, lines = go_hpc(
        tmp_path, cert(), env=("EPOCHS=3",), volumes=(f"{tmp_path}:/data:ro",), workdir="/w"
    )
    assert outcome.exit_code == 7 and outcome.refusals == ()
    assert launched == [[
        str(tmp_path / "apptainer"), "exec", "--containall", "--nv", "--bind", f"{tmp_path}:/data:ro",
        "--env", "EPOCHS=3", "--pwd", "/w", str(tmp_path / "train.sif"), "python", "train.py",
    ]]  # fmt: skip
    assert any("covers this run" in line and "apptainer --nv" in line for line in lines)
    (entry,) = run_log(tmp_path)
    assert entry["runtime"] == "apptainer" and entry["image"] == IMAGE_ID and entry["exit_code"] == 7
    assert entry["gpu_access"] == "apptainer --nv" and entry["outcome"] == "exited"


def test_an_uncovered_file_is_refused_before_the_runtime_starts(tmp_path: Path) -> None:
    with pytest.raises(CertificateRefusedError) as exc:
        go_hpc(tmp_path, None)
    assert f"no certificate for image {IMAGE_ID}" in exc.value.message and exc.value.exit_code == 12
    assert run_log(tmp_path)[0]["outcome"] == "refused"
    # a GPU certificate on a host without GPUs: the same refusal a Docker run gets
    with pytest.raises(CertificateRefusedError):
        go_hpc(tmp_path, cert(), gpus=())
    outcome, launched, _ = go_hpc(tmp_path, None, force=True)
    assert outcome.forced and len(launched) == 1 and run_log(tmp_path)[-1]["forced"] is True


def test_enroot_runs_a_squashfs_with_its_hook_or_without_gpus(tmp_path: Path) -> None:
    _, launched, _ = go_hpc(
        tmp_path, cert("certified-cpu-only", gpus=()), runtime="enroot", gpu_access="none"
    )
    assert launched == [
        [str(tmp_path / "enroot"), "start", str(tmp_path / "train.sqsh"), "python", "train.py"]
    ]
    with pytest.raises(UsageError, match="enroot start has no working-directory option"):
        go_hpc(tmp_path, cert(), runtime="enroot", workdir="/w")


def test_a_gpu_job_keeps_the_images_jit_cache_in_a_folder_of_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an image envbuilder built declares the folder (certify/jit_cache.py); the sidecar keeps its labels
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    declared = dataclasses.replace(IMAGE, labels={**IMAGE.labels, LABEL_JIT_CACHE: JIT_CACHE_DIR})
    folder = tmp_path / "cache" / "volumes" / volume_name(IMAGE_ID, "run")
    inductor = f"TORCHINDUCTOR_CACHE_DIR={JIT_CACHE_DIR}/torchinductor"
    for runtime, fmt, flag, value in (
        ("apptainer", "sif", "--bind", f"{folder}:{JIT_CACHE_DIR}"),
        ("enroot", "sqsh", "--mount", f"{folder}:{JIT_CACHE_DIR}:none,bind"),
    ):
        path = exported_file(tmp_path, fmt, declared)
        (argv,) = go_hpc(tmp_path, cert(), runtime=runtime, path=path)[1]
        assert argv[argv.index(flag) + 1] == value and f"{CACHE_ENV}={JIT_CACHE_DIR}" in argv
        assert inductor in argv  # torch.compile's cache in its folder of the same volume
        assert folder.is_dir()
        # not asked or no GPU: no folder, no variable
        for opts in ({"jit_cache": False}, {"gpu_access": "none"}):
            certificate = cert("certified-cpu-only", gpus=()) if opts.get("gpu_access") else cert()
            (argv,) = go_hpc(tmp_path, certificate, runtime=runtime, path=path, **opts)[1]
            assert flag not in argv and f"{CACHE_ENV}={JIT_CACHE_DIR}" not in argv and inductor not in argv
        # the caller's own CUDA cache stays theirs; torch.compile's still goes to the folder
        (argv,) = go_hpc(tmp_path, cert(), runtime=runtime, path=path, env=(f"{CACHE_ENV}=/scratch/jit",))[1]
        assert flag in argv and inductor in argv and f"{CACHE_ENV}={JIT_CACHE_DIR}" not in argv
    # an image that does not declare it (one envbuilder did not build): as before
    (argv,) = go_hpc(tmp_path, cert())[1]
    assert "--bind" not in argv and not any(a.startswith(CACHE_ENV) for a in argv)


def test_the_wrong_format_or_a_docker_access_mode_is_refused(tmp_path: Path) -> None:
    sif = exported_file(tmp_path, "sif")
    with pytest.raises(UsageError, match="is a sif file; --runtime enroot runs sqsh files"):
        go_hpc(tmp_path, cert(), runtime="enroot", path=sif)
    with pytest.raises(UsageError, match="--gpu-access cdi is not one of the apptainer runtime's modes"):
        go_hpc(tmp_path, cert(), path=sif, gpu_access="cdi")
    with pytest.raises(ContainerRuntimeError, match="no apptainer here"):
        run_exported(
            HpcRunOptions(path=sif, runtime="apptainer", command=("true",), tool=str(tmp_path / "missing")),
            find_certificate=lambda info: [cert()],
            probe=host,
        )
    assert not (tmp_path / "runs.jsonl").exists()  # nothing that could not start is logged


def test_cli_export_and_run_runtime_refuse_bad_combinations(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["export", "team/train:1"])
    assert res.exit_code == 2 and "give exactly one of --sif FILE or --sqsh FILE" in res.output
    res = runner.invoke(cli, ["export", "team/train:1", "--sqsh", "x.sqsh", "--apptainer-image", "a"])
    assert res.exit_code == 2 and "--apptainer/--apptainer-image apply to --sif" in res.output
    res = runner.invoke(
        cli, ["export", "team/train:1", "--sif", "x.sif", "--apptainer", str(tmp_path / "no")]
    )
    assert res.exit_code == 24 and "no apptainer here" in res.output
    sif = exported_file(tmp_path)
    res = runner.invoke(
        cli, ["run", "--runtime", "apptainer", "--monitor", "--ipc", "host", str(sif), "--", "true"]
    )
    assert res.exit_code == 2 and "--monitor, --ipc only apply to --runtime docker" in res.output
    res = runner.invoke(cli, ["run", "--runtime", "apptainer", str(tmp_path / "none.sif"), "--", "true"])
    assert res.exit_code == 2 and "is not a file" in res.output and "Traceback" not in res.output
