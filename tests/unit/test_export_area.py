"""The export area (issue 23 item 14; benchmarks/mutants.py --auto export, blind results in
benchmarks/results/mutants-area-export-2026-12-06.md): an exported image (engine/hpc.py), its
sidecar read back (read_exported), the run of an exported file (run/hpc.py), what the file
runtimes share (runtime/files.py) and the digests of files (hashing.py). Each rule is a table or
a small test that failed with a mutant that survived the blind run (named at each test).
Everything is written inside tmp_path; the commands run are this Python."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cert_factory import H200, IMAGE_ID, RTX, cert
from fake_engine import FakeEngine
from fd_count import count_descriptors

from envbuilder import atomic, bounded
from envbuilder.atomic import append_jsonl, default_mode, path_kind, write_text_atomic, written
from envbuilder.bounded import NotRegularFile, TooLarge, read_bounded, read_text_bounded
from envbuilder.certify.certificate import Certificate
from envbuilder.engine import ImageInfo
from envbuilder.engine.container import Mount
from envbuilder.engine.hpc import (
    SIDECAR_KIND,
    Exported,
    Tool,
    check_tool,
    export_image,
    find_tool,
    read_exported,
    run_foreground,
    run_tool,
    sidecar_path,
)
from envbuilder.errors import CertificateRefusedError, ContainerRuntimeError, OutputError, UsageError
from envbuilder.hashing import sha256_digest, sha256_file
from envbuilder.host import GpuInfo, HostReport
from envbuilder.run.hpc import HpcRunOptions, job_spec, run_exported
from envbuilder.runtime import GpuGrant
from envbuilder.runtime.files import binds_of, host_gpus, inspect_file, remove_file, run_argv

PY = sys.executable
IMAGE = ImageInfo(
    id=IMAGE_ID,
    tags=("team/train:1", "team/train:latest"),
    repo_digests=("127.0.0.1:5000/team/train@sha256:" + "12" * 32,),
    labels={"io.envbuilder.stack": "{}", "org.opencontainers.image.title": "train"},
    env=("PATH=/usr/bin", "NVIDIA_REQUIRE_CUDA=cuda>=13.0"),
    size=170_000_000,
)
CONTENT = b"hsqs" + b"\0" * 60


def binary(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def tool(tmp_path: Path, name: str = "apptainer") -> Tool:
    return find_tool(name, path=str(binary(tmp_path, name)))


def writes(content: bytes | None = CONTENT) -> Callable[[ImageInfo, Path, Path], None]:
    """A runtime's conversion step that writes `content` (None: nothing) where it is told."""

    def convert(_info: ImageInfo, built: Path, _work: Path) -> None:
        if content is not None:
            built.write_bytes(content)

    return convert


def export(tmp_path: Path, out: Path, fmt: str = "sif", convert: Any = None) -> Exported:
    eng = FakeEngine(images={"team/train:1": IMAGE})
    return export_image(eng, "team/train:1", out, fmt, tool(tmp_path), convert or writes())


# --------------------------------------------------------------------------- the tool


def test_find_tool_takes_the_path_given_else_the_one_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EX002: a tool found by its path describes itself by that path (messages, the sidecar's tool)
    given = binary(tmp_path, "apptainer")
    assert find_tool("apptainer", path=str(given)).describe() == str(given)
    # EX005, EXN001: without a path, the one on PATH
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = binary(bindir, "enroot")
    monkeypatch.setenv("PATH", str(bindir))
    assert find_tool("enroot") == Tool(name="enroot", path=str(on_path))
    # EXH004: a path given wins over the one on PATH
    assert find_tool("enroot", path=str(given)) == Tool(name="enroot", path=str(given))
    # EX008: none on PATH is the runtime error with its hint, not a TypeError
    with pytest.raises(ContainerRuntimeError, match=r"no apptainer here \(not on PATH\)") as exc:
        find_tool("apptainer", hint="install it")
    assert exc.value.hint == "install it"
    # EXN002: a folder at the path is not the binary
    with pytest.raises(ContainerRuntimeError, match="is not a file"):
        find_tool("enroot", path=str(bindir))


def test_exported_to_dict_names_every_field() -> None:
    # EX012, EX013, EXN003: the seconds to two decimals
    done = Exported(
        path=Path("/x/t.sif"),
        sidecar=Path("/x/t.sif.envbuilder.json"),
        format="sif",
        size=64,
        sha256="sha256:" + "ab" * 32,
        seconds=12.34567,
        tool="/x/apptainer",
    )
    assert done.to_dict() == {
        "path": "/x/t.sif",
        "sidecar": "/x/t.sif.envbuilder.json",
        "format": "sif",
        "size_bytes": 64,
        "sha256": "sha256:" + "ab" * 32,
        "seconds": 12.35,
        "tool": "/x/apptainer",
    }


def test_run_tool_captures_text_and_passes_a_failure_back(tmp_path: Path) -> None:
    # EX014, EX015, EX016: output captured as text; a failed tool is check_tool's to judge
    res = run_tool(
        [PY, "-c", "import sys; print('out'); sys.stderr.write('FATAL: no space\\n'); sys.exit(3)"], 30
    )
    assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "FATAL: no space\n")
    # EX017: a tool past its time is a runtime error, not a result
    with pytest.raises(ContainerRuntimeError, match=r"timed out after 0\.3 s"):
        run_tool([PY, "-c", "import time; time.sleep(20)"], 0.3)
    # EX018, EXV002, EXV003: a tool that cannot start (missing; a folder: PermissionError)
    for argv0 in (tmp_path / "missing", tmp_path):
        with pytest.raises(ContainerRuntimeError, match="cannot run"):
            run_tool([str(argv0)], 30)


@pytest.mark.parametrize(
    ("stdout", "stderr", "shown"),
    [
        ("", "FATAL: no space left\n", "FATAL: no space left"),
        ("only on stdout\n", "", "only on stdout"),
        ("progress\n", "FATAL: x\n", "FATAL: x"),
    ],
)
def test_check_tool_quotes_the_tools_last_lines(stdout: str, stderr: str, shown: str) -> None:
    # EX027, EXN021: a tool that says why on stdout only is quoted too; EXH026: stderr first
    res = subprocess.CompletedProcess(["apptainer"], 255, stdout, stderr)
    with pytest.raises(ContainerRuntimeError, match=r"/x/apptainer failed \(exit 255\)") as exc:
        check_tool(res, Tool(name="apptainer", path="/x/apptainer"))
    assert list(exc.value.log) == [shown]
    check_tool(subprocess.CompletedProcess(["apptainer"], 0, "", "warning"), Tool(name="apptainer"))


# --------------------------------------------------------------------------- export_image


def test_a_conversion_that_writes_nothing_fails_and_leaves_nothing(tmp_path: Path) -> None:
    # EX022, EXN011: "success" without the file is an error, nothing renamed, no sidecar
    out = tmp_path / "train.sif"
    with pytest.raises(ContainerRuntimeError, match=r"reported success but wrote no image\.sif"):
        export(tmp_path, out, convert=writes(None))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["apptainer"]


def test_a_work_folder_that_cannot_be_removed_does_not_fail_a_finished_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EX023: the conversion's leftovers may not be this user's to remove (apptainer in a Docker
    # image writes as root into the work folder); the export itself is complete
    real_rmtree = __import__("shutil").rmtree

    def rmtree(path: Any, ignore_errors: bool = False, onerror: Any = None) -> None:
        if not ignore_errors:
            raise PermissionError(13, "Permission denied", str(path))
        real_rmtree(path, ignore_errors=True)

    monkeypatch.setattr("envbuilder.engine.hpc.shutil.rmtree", rmtree)
    done = export(tmp_path, tmp_path / "train.sif")
    assert done.path.read_bytes() == CONTENT and read_exported(done.path).image.id == IMAGE_ID


def ticking(monkeypatch: pytest.MonkeyPatch, module: str, *ticks: float) -> None:
    """`module`'s time.monotonic() answers `ticks` in turn (what a conversion or a run times)."""
    it = iter(ticks)
    monkeypatch.setattr(f"{module}.time", SimpleNamespace(monotonic=lambda: next(it)))


def test_the_conversion_works_in_a_hidden_folder_beside_the_file_and_is_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EXT017: the work folder is .FILE.XXXX beside FILE (same file system: the rename is atomic;
    # hidden, named after what it builds); EXT023: the seconds are the conversion's
    ticking(monkeypatch, "envbuilder.engine.hpc", 100.0, 102.5)
    works: list[Path] = []

    def convert(_info: ImageInfo, built: Path, work: Path) -> None:
        works.append(work)
        built.write_bytes(CONTENT)

    done = export(tmp_path, tmp_path / "train.sif", convert=convert)
    (work,) = works
    assert work.parent == tmp_path and work.name.startswith(".train.sif.") and not work.exists()
    assert done.seconds == 2.5


def test_a_conversion_that_writes_a_folder_fails(tmp_path: Path) -> None:
    # EXS004: a folder where the file should be is not the file
    def convert(_info: ImageInfo, built: Path, _work: Path) -> None:
        built.mkdir()

    with pytest.raises(ContainerRuntimeError, match=r"reported success but wrote no image\.sif"):
        export(tmp_path, tmp_path / "train.sif", convert=convert)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["apptainer"]


def test_an_export_is_named_by_its_resolved_path(tmp_path: Path) -> None:
    # EXS003: `..` and a linked folder resolved (the path the sidecar is read back by)
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real)
    assert export(tmp_path, tmp_path / "linked" / "t.sif").path == real / "t.sif"
    assert export(tmp_path, real / ".." / "u.sif").path == tmp_path / "u.sif"


def test_a_new_export_replaces_the_old_file_never_writes_into_it(tmp_path: Path) -> None:
    # EXS005: renamed over the old file, not copied into it: a hard link to the old export (or a
    # run reading it) keeps the old bytes
    out = tmp_path / "train.sif"
    export(tmp_path, out, convert=writes(b"old image"))
    kept = tmp_path / "kept.sif"
    os.link(out, kept)
    export(tmp_path, out)
    assert out.read_bytes() == CONTENT and kept.read_bytes() == b"old image"


def test_the_sidecar_is_stable_sorted_indented_json(tmp_path: Path) -> None:
    # EX030, EX031, EX032, EXN024: the sidecar's exact text (diffable, one field a line)
    out = tmp_path / "t.sif"
    done = export(tmp_path, out)
    assert done.sidecar == sidecar_path(out) == tmp_path / "t.sif.envbuilder.json"
    assert done.size == len(CONTENT) and done.sha256 == sha256_digest(CONTENT) == sha256_file(out)
    assert done.format == "sif" and done.path == out  # EXH020
    assert done.sidecar.read_text() == (
        "{\n"
        '  "exported_from": "team/train:1",\n'
        '  "format": "sif",\n'
        '  "image": {\n'
        '    "env": [\n'
        '      "PATH=/usr/bin",\n'
        '      "NVIDIA_REQUIRE_CUDA=cuda>=13.0"\n'
        "    ],\n"
        f'    "id": "{IMAGE_ID}",\n'
        '    "labels": {\n'
        '      "io.envbuilder.stack": "{}",\n'
        '      "org.opencontainers.image.title": "train"\n'
        "    },\n"
        '    "repo_digests": [\n'
        f'      "{IMAGE.repo_digests[0]}"\n'
        "    ],\n"
        '    "tags": [\n'
        '      "team/train:1",\n'
        '      "team/train:latest"\n'
        "    ]\n"
        "  },\n"
        f'  "kind": "{SIDECAR_KIND}",\n'
        f'  "sha256": "{done.sha256}",\n'
        f'  "tool": "{tmp_path / "apptainer"}"\n'
        "}\n"
    )


# --------------------------------------------------------------------------- the sidecar read back


def test_every_field_of_the_image_is_read_back(tmp_path: Path) -> None:
    # EX035, EX043, EX044: tags, labels and env come back as exported
    back = read_exported(export(tmp_path, tmp_path / "t.sif").path)
    assert back.image == ImageInfo(
        id=IMAGE.id, tags=IMAGE.tags, repo_digests=IMAGE.repo_digests, labels=IMAGE.labels, env=IMAGE.env
    )
    assert back.format == "sif" and back.sha256 == sha256_digest(CONTENT)
    assert back.path == tmp_path / "t.sif"  # EXH034


def _set(*keys: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        *path, last = keys
        for key in path:
            doc = doc[key]
        doc[last] = value

    return edit


def _drop(*keys: str) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        *path, last = keys
        for key in path:
            doc = doc[key]
        del doc[last]

    return edit


NOT_READABLE = "has no readable sidecar"
NOT_RECORD = "is not an envbuilder export record"
NOT_FILE = "is not the file envbuilder exported"
DIGEST = sha256_digest(CONTENT)
SIDECAR_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("kind missing", _drop("kind"), NOT_RECORD),  # EX052
    ("kind another", _set("kind", value="docker-archive"), NOT_RECORD),  # EX050, EX052, EX055
    ("format missing", _drop("format"), NOT_READABLE),  # EXN031
    ("format null", _set("format", value=None), NOT_RECORD),  # EX049
    ("format a number", _set("format", value=5), NOT_RECORD),  # EX049
    ("format a path", _set("format", value="../sif"), NOT_RECORD),  # EX051, EXN033
    ("format empty", _set("format", value=""), NOT_RECORD),
    ("sha256 missing", _drop("sha256"), NOT_READABLE),
    ("sha256 another file's", _set("sha256", value="sha256:" + "0" * 64), NOT_FILE),
    ("sha256 empty", _set("sha256", value=""), NOT_FILE),  # EX059
    ("sha256 cut short", _set("sha256", value=DIGEST[:19]), NOT_FILE),  # EX059
    ("sha256 the same first 12", _set("sha256", value=DIGEST[:12] + "0" * 59), NOT_FILE),  # EX060
    ("image missing", _drop("image"), NOT_READABLE),
    ("image a list", _set("image", value=[IMAGE_ID]), NOT_READABLE + r".*image is not an object"),  # EXN032
    ("image id missing", _drop("image", "id"), NOT_READABLE),
    ("labels not a mapping", _set("image", "labels", value=["a"]), NOT_READABLE),  # EXN030
    # a field of the wrong type is refused, never read as something else (the ID "None", a tag
    # per character of a string)
    ("sha256 a number", _set("sha256", value=5), NOT_READABLE),
    ("image id null", _set("image", "id", value=None), NOT_READABLE),
    ("image id a number", _set("image", "id", value=5), NOT_READABLE),
    ("image id empty", _set("image", "id", value=""), NOT_READABLE),
    ("tags a string", _set("image", "tags", value="team/train:1"), NOT_READABLE),
    ("repo_digests of numbers", _set("image", "repo_digests", value=[1]), NOT_READABLE),
    ("env a string", _set("image", "env", value="PATH=/usr/bin"), NOT_READABLE),
    ("env a mapping", _set("image", "env", value={"PATH": "/nonexistent/bin"}), NOT_READABLE),
    ("labels of numbers", _set("image", "labels", value={"a": 1}), NOT_READABLE),
    ("labels a string", _set("image", "labels", value="a=1"), NOT_READABLE),
    ("tags, the second a number", _set("image", "tags", value=["team/train:1", 5]), NOT_READABLE),
    ("labels, the second a number", _set("image", "labels", value={"a": "1", "b": 2}), NOT_READABLE),
]


@pytest.mark.parametrize(
    ("edit", "refusal"), [c[1:] for c in SIDECAR_CASES], ids=[c[0] for c in SIDECAR_CASES]
)
def test_a_sidecar_field_missing_or_wrong_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], refusal: str
) -> None:
    out = export(tmp_path, tmp_path / "t.sif").path
    side = sidecar_path(out)
    doc = json.loads(side.read_text())
    edit(doc)
    side.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=refusal):
        read_exported(out)


def test_a_folder_is_not_an_exported_file(tmp_path: Path) -> None:
    # EXS006: refused as no file, before its sidecar is looked for
    folder = tmp_path / "t.sif"
    folder.mkdir()
    with pytest.raises(UsageError, match="is not a file"):
        read_exported(folder)


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (None, NOT_READABLE),  # EXN029: no sidecar (OSError)
        ("{not json", NOT_READABLE),  # EXN030 (ValueError)
        ("[]", NOT_READABLE),  # EXN032 (TypeError)
    ],
    ids=["missing", "not-json", "a-list"],
)
def test_a_sidecar_that_is_not_one_is_refused(tmp_path: Path, text: str | None, refusal: str) -> None:
    out = export(tmp_path, tmp_path / "t.sif").path
    side = sidecar_path(out)
    side.unlink()
    if text is not None:
        side.write_text(text)
    with pytest.raises(UsageError, match=refusal):
        read_exported(out)


def test_optional_image_fields_may_be_null_or_missing(tmp_path: Path) -> None:
    out = export(tmp_path, tmp_path / "t.sif").path
    side = sidecar_path(out)
    doc = json.loads(side.read_text())
    doc["image"] = {"id": IMAGE_ID, "tags": None, "labels": None}
    side.write_text(json.dumps(doc))
    assert read_exported(out).image == ImageInfo(id=IMAGE_ID, tags=(), repo_digests=())


# --------------------------------------------------------------------------- a foreground run


def test_run_foreground_passes_the_exit_code_back_in_this_process_group(tmp_path: Path) -> None:
    # EX063: the job stays in this terminal's process group (Ctrl-C reaches it), EXN035
    seen = tmp_path / "pgid"
    code = run_foreground(
        [PY, "-c", f"import os; open({str(seen)!r}, 'w').write(str(os.getpgid(0))); raise SystemExit(5)"]
    )
    assert code == 5 and int(seen.read_text()) == os.getpgrp()
    # EX064, EXV005, EXV006: a command that cannot start (missing; a folder: PermissionError)
    for argv0 in (tmp_path / "missing", tmp_path):
        with pytest.raises(ContainerRuntimeError, match="cannot start"):
            run_foreground([str(argv0)])


_INTERRUPTS_ITS_PARENT = """
import os, signal, sys, time
def stop(*_):
    time.sleep(0.3)  # a job that takes a moment to stop is waited for
    open(sys.argv[1], "w").write("SIGINT")
    raise SystemExit(0)
signal.signal(signal.SIGINT, stop if sys.argv[2] == "stops" else signal.SIG_IGN)
os.kill(os.getppid(), signal.SIGINT)
time.sleep(10)
"""


@pytest.mark.parametrize("child", ["stops", "ignores"])
def test_ctrl_c_reaches_the_job_then_is_raised(tmp_path: Path, child: str) -> None:
    # EX065, EXN036..EXN038: Ctrl-C (here the job sends it to this process) is passed on as
    # SIGINT; a job that ignores it is killed after the stop timeout; then it is raised again
    seen = tmp_path / "seen"
    started = time.monotonic()
    # Python's own SIGINT handler, also where this test runs with SIGINT ignored (started in the
    # background by a shell without job control, as benchmarks/mutants.py is)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_foreground(
                [PY, "-c", _INTERRUPTS_ITS_PARENT, str(seen), child],
                stop_timeout_s=5.0 if child == "stops" else 0.5,
            )
    finally:
        signal.signal(signal.SIGINT, before)
    assert time.monotonic() - started < 8
    assert seen.exists() == (child == "stops")
    # EXN039: the killed job is waited for, no zombie left (this test process has no other child)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        assert pid == 0, "the job was left behind unwaited for"
        time.sleep(0.05)


# --------------------------------------------------------------------------- run --runtime


def host(cuda_driver: str | None = "13.0", driver: str = "580.159.04") -> HostReport:
    return HostReport(source="nvml", driver=driver, cuda_driver=cuda_driver, gpus=(H200,))


def go(
    tmp_path: Path,
    certificate: Certificate | None = None,
    *,
    report: HostReport | None = None,
    probes: list[int] | None = None,
    **opts: Any,
) -> tuple[Any, list[list[str]], list[str]]:
    out = tmp_path / "train.sif"
    if not out.exists():
        export(tmp_path, out)
    launched: list[list[str]] = []
    lines: list[str] = []

    def probe() -> HostReport:
        if probes is not None:
            probes.append(1)
        return report or host()

    kw: dict[str, Any] = {"say": lines.append, "probe": probe}
    kw.update({k: opts.pop(k) for k in ("say", "probe") if k in opts})
    outcome = run_exported(
        HpcRunOptions(
            path=out,
            runtime="apptainer",
            command=opts.pop("command", ("python", "train.py")),
            tool=str(tmp_path / "apptainer"),
            **opts,
        ),
        find_certificate=lambda info: [certificate or cert()] if info.id == IMAGE_ID else [],
        log_dir=tmp_path,
        launch=lambda argv: launched.append(list(argv)) or 0,  # type: ignore[func-returns-value]
        **kw,
    )
    return outcome, launched, lines


def run_log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]


def test_every_volume_goes_in_and_the_host_is_probed_once(tmp_path: Path) -> None:
    # EX066, EX074: two -v binds both reach the command line; one host probe per run
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    probes: list[int] = []
    _, launched, lines = go(tmp_path, volumes=(f"{tmp_path}/a:/a:ro", f"{tmp_path}/b:/b"), probes=probes)
    assert lines[-1] == f"envbuilder: {shlex.join(launched[0])}"  # EXN063: the command line said first
    assert f"{tmp_path}/a:/a:ro" in launched[0] and f"{tmp_path}/b:/b" in launched[0]
    assert probes == [1]


def test_a_cpu_run_of_a_gpu_image_is_the_users_choice_and_force_is_recorded(tmp_path: Path) -> None:
    # EXT079: --gpu-access none is what the user asked for: no "no GPU" refusal
    outcome, launched, _ = go(tmp_path, gpu_access="none")
    assert outcome.refusals == () and "--nv" not in launched[0]
    # EXT091: a forced run hands its refusals back
    outcome, launched, _ = go(tmp_path, cert(min_driver="999.0"), force=True)
    assert [r.reason for r in outcome.refusals] == ["driver-too-old"] and outcome.forced and launched


def test_job_spec_the_users_variables_win_and_an_empty_workdir_is_refused(tmp_path: Path) -> None:
    opts = HpcRunOptions(
        path=tmp_path / "t.sqsh", runtime="enroot", command=("true",), env=("NVIDIA_VISIBLE_DEVICES=0",)
    )
    grant = GpuGrant(env={"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"})
    spec = job_spec(opts, grant)  # EXS007: -e wins over the grant's variable
    assert spec.env == {"NVIDIA_VISIBLE_DEVICES": "0", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    assert spec.workdir is None
    with pytest.raises(UsageError, match="must be an absolute path"):  # EXS008: -w "" is refused
        job_spec(replace(opts, workdir=""), grant)


def test_no_command_is_refused_before_anything(tmp_path: Path) -> None:
    # EX073
    with pytest.raises(UsageError, match="no command given: --runtime apptainer needs one"):
        go(tmp_path, command=())
    assert not (tmp_path / "runs.jsonl").exists()


def test_without_say_or_probe_the_defaults_are_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # EX069, EX070: lines go to stderr; EX077: the host probe is this host's (here a fake)
    monkeypatch.setattr("envbuilder.run.hpc.probe_host", host)
    go(tmp_path, say=None, probe=None)
    err = capsys.readouterr().err
    assert "covers this run" in err and "envbuilder: " in err


@pytest.mark.parametrize(
    ("report", "covered"),
    [
        (host(cuda_driver=None), True),  # EX088, EX089: the driver's own CUDA from the matrix
        (host(cuda_driver="12.8"), False),  # EX090: the probe's word first
        (host(cuda_driver=None, driver="570.86.10"), False),  # EXN054: 12.8, not "570.86.10"
    ],
    ids=["unknown-cuda", "probed-cuda", "older-driver"],
)
def test_the_hosts_cuda_is_the_probes_else_the_drivers(
    tmp_path: Path, report: HostReport, covered: bool
) -> None:
    certificate = cert(min_driver="535.54.03")  # only NVIDIA_REQUIRE_CUDA decides here
    if covered:
        outcome, launched, _ = go(tmp_path, certificate, report=report)
        assert outcome.refusals == () and len(launched) == 1
    else:
        with pytest.raises(CertificateRefusedError, match=r"requires cuda>=13\.0"):
            go(tmp_path, certificate, report=report)


def test_the_gpus_judged_are_the_probes(tmp_path: Path) -> None:
    # EXT077 (blind): a certificate of the H200 does not cover this host's RTX 3090
    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(RTX,))
    with pytest.raises(CertificateRefusedError, match="RTX 3090"):
        go(tmp_path, report=report)


def test_the_runtimes_own_mode_is_taken_and_a_relative_workdir_refused(tmp_path: Path) -> None:
    # EXN044: --gpu-access nv is apptainer's; EXN042: -w is checked as for a Docker run
    _, launched, _ = go(tmp_path, gpu_access="nv")
    assert "--nv" in launched[0]
    with pytest.raises(UsageError, match="the working directory must be an absolute path"):
        go(tmp_path, workdir="w")


def test_the_run_log_records_seconds_to_the_millisecond(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EX091, EX092, EXN065
    ticking(monkeypatch, "envbuilder.run.hpc", 100.0, 101.23456)
    outcome, _, _ = go(tmp_path)
    (entry,) = run_log(tmp_path)
    assert entry["seconds"] == 1.235 and entry["outcome"] == "exited"
    # EXH060, EXH069: the log names the file run, and the run's ID is the one handed back
    assert entry["ref"] == str(tmp_path / "train.sif") and entry["run_id"] == outcome.run_id


def test_an_interrupted_run_is_logged_as_130(tmp_path: Path) -> None:
    # EXT086, EXT087: Ctrl-C during the job: the log says so, with the shell's 128 + SIGINT
    export(tmp_path, tmp_path / "train.sif")

    def interrupted(_argv: Any) -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_exported(
            HpcRunOptions(
                path=tmp_path / "train.sif",
                runtime="apptainer",
                command=("true",),
                tool=str(tmp_path / "apptainer"),
            ),
            find_certificate=lambda info: [cert()],
            probe=host,
            say=lambda _line: None,
            log_dir=tmp_path,
            launch=interrupted,
        )
    (entry,) = run_log(tmp_path)
    assert (entry["outcome"], entry["exit_code"]) == ("interrupted", 130)


def test_an_export_names_its_file_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # EXN006: a relative FILE is reported (and its sidecar named) by where it is
    monkeypatch.chdir(tmp_path)
    done = export(tmp_path, Path("t.sif"))
    assert done.path == tmp_path / "t.sif" and done.sidecar == tmp_path / "t.sif.envbuilder.json"
    assert done.to_dict()["path"] == str(tmp_path / "t.sif")


# --------------------------------------------------------------------------- runtime/files.py


def test_inspect_file_reads_the_sidecar_without_hashing(tmp_path: Path) -> None:
    # EX093, EX094, EX095
    assert inspect_file(str(tmp_path / "missing.sif")) is None
    assert inspect_file(str(tmp_path)) is None  # a folder is not an exported file
    out = export(tmp_path, tmp_path / "t.sif").path
    out.write_bytes(b"changed since")  # the hash is run's to check, not inspect's
    info = inspect_file(str(out))
    assert info is not None and info.id == IMAGE_ID
    sidecar_path(out).unlink()
    with pytest.raises(UsageError, match=NOT_READABLE):
        inspect_file(str(out))


def test_remove_file_removes_the_file_and_its_sidecar(tmp_path: Path) -> None:
    # EX096..EX099, EXN072..EXN075
    assert remove_file(str(tmp_path / "missing.sif")) is False
    folder = tmp_path / "f.sif"
    folder.mkdir()
    assert remove_file(str(folder)) is False and folder.is_dir()
    out = export(tmp_path, tmp_path / "t.sif").path
    assert remove_file(str(out)) is True
    assert not out.exists() and not sidecar_path(out).exists()
    bare = tmp_path / "bare.sif"
    bare.write_bytes(b"no sidecar")
    assert remove_file(str(bare)) is True and not bare.exists()


def test_run_argv_returns_text_and_each_stderr_line(tmp_path: Path) -> None:
    # EX100..EX102, EX110, EX111, EXN076..EXN078
    lines: list[str] = []
    res = run_argv(
        [PY, "-c", "import sys; print('out'); sys.stderr.write('one\\ntwo\\n'); sys.exit(4)"],
        on_stderr=lines.append,
    )
    assert (res.exit_code, res.stdout, res.stderr) == (4, "out\n", "one\ntwo\n")
    assert lines == ["one", "two"]
    # EXT111: without on_stderr the lines are only returned
    assert run_argv([PY, "-c", "import sys; sys.stderr.write('said\\n')"]).stderr == "said\n"
    # EX109, EXV012, EXV013: cannot start (missing; a folder: PermissionError)
    for argv0 in (tmp_path / "missing", tmp_path):
        with pytest.raises(ContainerRuntimeError, match="cannot run"):
            run_argv([str(argv0)])


@pytest.mark.parametrize(
    ("script", "stdout", "stderr"),
    [
        ("import time; time.sleep(20)", "", ""),  # EX104, EX105, EX107, EX108: no output is ""
        (
            # EXT103, EXT104: bytes that are not UTF-8 are replaced, not a UnicodeDecodeError
            "import os, time; os.write(1, b'partial \\xff\\n'); os.write(2, b'e \\xfe\\n'); time.sleep(20)",
            "partial \ufffd\n",
            "e \ufffd\n",
        ),
    ],
    ids=["silent", "partial"],
)
def test_run_argv_past_its_time_is_124_with_what_it_printed(script: str, stdout: str, stderr: str) -> None:
    res = run_argv([PY, "-c", script], timeout_s=1.0)
    assert (res.exit_code, res.stdout, res.stderr) == (124, stdout, stderr)


def test_host_gpus_and_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    # EX112: no probe given is this host's probe (here a fake); EX115, EXN079..EXN081
    two = HostReport(
        source="nvml",
        driver="580.159.04",
        cuda_driver="13.0",
        gpus=(H200, GpuInfo(index=1, name="NVIDIA H200", uuid="GPU-2", cc="9.0", brand="nvidia")),
    )
    assert host_gpus(lambda: two) == 2
    monkeypatch.setattr("envbuilder.runtime.files.probe_host", lambda: two)
    assert host_gpus(None) == 2
    mounts = [Mount(source="/d", target="/data", read_only=True), Mount(source="/s", target="/scratch")]
    assert binds_of(mounts) == [("/d", "/data", True), ("/s", "/scratch", False)]


# --------------------------------------------------------------------------- refused outputs


def _link_to_a_file(path: Path) -> None:
    victim = path.parent / "victim"
    victim.write_bytes(b"mine")
    path.symlink_to(victim)


def _dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


HOSTILE = {"link": _link_to_a_file, "dangling": _dangling_link, "fifo": _fifo, "folder": _folder}


@pytest.mark.parametrize("which", ["file", "sidecar"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_refused_output_path_writes_nothing(tmp_path: Path, kind: str, which: str) -> None:
    # Both outputs of an export, the file and its sidecar, are checked before the conversion
    # starts (the output policy of envbuilder.atomic): a refused sidecar path left the converted
    # file behind without its sidecar, which read_exported then refused.
    work = tmp_path / "w"
    work.mkdir()
    out = work / "train.sif"
    HOSTILE[kind](out if which == "file" else sidecar_path(out))
    before = sorted(p.name for p in work.iterdir())
    converted: list[Path] = []

    def convert(_info: ImageInfo, built: Path, _work: Path) -> None:
        converted.append(built)
        built.write_bytes(CONTENT)

    with pytest.raises(OutputError, match="refusing to write"):
        export(tmp_path, out, convert=convert)
    assert converted == [] and sorted(p.name for p in work.iterdir()) == before


@pytest.mark.parametrize("which", ["file", "sidecar"])
def test_a_missing_folder_writes_nothing(tmp_path: Path, which: str) -> None:
    out = tmp_path / "missing" / "train.sif"
    with pytest.raises(OutputError, match="does not exist"):
        export(tmp_path, out)
    assert not out.parent.exists()


# --------------------------------------------------------------------------- atomic.py, bounded.py
# The writers and readers the io area names no function of (path_kind, write_text_atomic,
# written, _umask, append_jsonl, read_text_bounded, _size, _first).


def test_the_umask_is_read_without_being_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # EX114, EX115 (blind io): Linux says the umask (/proc): setting it to read it would change it
    # for a moment for every thread of the process
    real_umask = os.umask
    before = real_umask(0o027)
    try:

        def umask(_mask: int) -> int:
            raise AssertionError("the umask was set to be read")

        monkeypatch.setattr(os, "umask", umask)
        assert default_mode() == 0o640 and default_mode(directory=True) == 0o750
    finally:
        monkeypatch.undo()
        real_umask(before)


def test_the_umask_read_by_setting_it_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # where the process status cannot be read: set, read, put back
    class Unreadable:
        def __init__(self, *_args: Any) -> None:
            pass

        def read_text(self) -> str:
            raise OSError("no process status here")

    before = os.umask(0o027)
    try:
        monkeypatch.setattr(atomic, "Path", Unreadable)
        assert atomic._umask() == 0o027
        monkeypatch.undo()
        assert os.umask(0o027) == 0o027  # put back as it was
    finally:
        os.umask(before)


def test_a_json_lines_record_is_one_sorted_line_under_a_lock_synced_and_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.jsonl"
    before = os.umask(0o022)
    try:
        append_jsonl(log, {"seconds": 1.5, "run_id": "a"})  # EX119 (blind io): keys sorted
    finally:
        os.umask(before)
    assert log.read_text(encoding="utf-8") == '{"run_id": "a", "seconds": 1.5}\n'
    assert stat.S_IMODE(log.stat().st_mode) == 0o644
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    seen = count_descriptors(monkeypatch)
    append_jsonl(log, {"run_id": "b"})
    assert len(seen.opened) == 1 and seen.closed == seen.opened and synced == seen.opened
    # a writer holding the lock keeps the next one waiting
    with log.open("a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        writer = threading.Thread(target=append_jsonl, args=(log, {"run_id": "c"}))
        writer.start()
        writer.join(0.5)
        waited = writer.is_alive()
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    writer.join(10)
    assert waited and log.read_text(encoding="utf-8").splitlines()[-1] == '{"run_id": "c"}'


def test_write_text_atomic_and_written(tmp_path: Path) -> None:
    out = tmp_path / "report.txt"
    assert write_text_atomic(out, "héllo\n") is False and out.read_bytes() == "héllo\n".encode()
    assert written(out, False) == f"wrote {out}"
    assert write_text_atomic(out, "again\n") is True and written(out, True) == f"replaced {out}"


def test_path_kind_names_each_kind(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    kinds = {p.name: path_kind(p.lstat().st_mode) for p in (fifo, link, tmp_path)}
    assert kinds == {"fifo": "a FIFO", "link": "a symbolic link", tmp_path.name: "a folder"}
    assert path_kind(0) == "not a regular file"


def test_read_text_bounded_decodes_follows_links_unless_told(tmp_path: Path) -> None:
    text = tmp_path / "spec.yaml"
    text.write_bytes("name: é\n".encode())
    link = tmp_path / "link.yaml"
    link.symlink_to(text)
    assert read_text_bounded(link) == "name: é\n"  # a link is followed by default
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        read_text_bounded(link, follow_symlinks=False)
    text.write_bytes(b"name: \xff\n")
    with pytest.raises(UnicodeDecodeError):
        read_text_bounded(text)


@pytest.mark.parametrize(
    ("limit", "said"),
    [(1023, "1023 bytes"), (1024, "1 KiB"), (1025, "1 KiB"), (2047, "1 KiB"), (2048, "2 KiB")],
)
def test_a_size_limit_is_said_in_bytes_below_one_kib_then_in_kib(
    tmp_path: Path, limit: int, said: str
) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * (limit + 1))
    with pytest.raises(TooLarge, match=f"^larger than {said}$"):
        read_bounded(big, limit)


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (ValueError("first line\nsecond line"), "first line"),
        (ValueError("x" * 200), "x" * 120),
        (ValueError(""), "ValueError"),
        (OverflowError("a\nb\nc"), "a"),
    ],
    ids=["first-line", "cut", "empty", "three-lines"],
)
def test_an_error_is_said_by_its_first_line_cut_or_its_type(exc: Exception, said: str) -> None:
    assert bounded._first(exc) == said
