"""`envbuilder up`'s pieces: step progress (plain and live), the offline fallbacks (pip's
find-links, local framework wheels, index reachability) and the CLI's GPU requirement."""

from __future__ import annotations

import http.server
import io
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_host import FakeNvml, FakeRunner
from packaging.version import Version

from envbuilder.cli import cli
from envbuilder.cli.progress_view import StepProgress
from envbuilder.doctor.checks import DockerState, DoctorInputs
from envbuilder.image.offline import configured_find_links, index_unreachable, local_framework_versions

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- progress


def test_plain_progress_numbers_each_step_once_and_times_it() -> None:
    out = io.StringIO()
    p = StepProgress(("doctor", "build", "report"), stream=out, tty=False)
    with p.step("doctor"):
        p.say("probing   GPUs\n and driver")
    with pytest.raises(RuntimeError), p.step("build"):
        raise RuntimeError("boom")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/3] doctor ..."
    assert lines[1] == "  probing GPUs and driver"
    assert re.fullmatch(r"\[1/3\] doctor done \d+\.\ds \(t=\d+s\)", lines[2])
    assert lines[3] == "[2/3] build ..."
    assert re.fullmatch(r"\[2/3\] build FAILED \d+\.\ds \(t=\d+s\)", lines[4])
    with pytest.raises(ValueError, match="unknown step"), p.step("push"):
        pass


def test_plain_progress_says_still_running_when_a_step_is_silent() -> None:
    out = io.StringIO()
    p = StepProgress(("build",), stream=out, tty=False, heartbeat_s=0.2)
    with p.step("build"):
        p.say("RUN pip install torch")
        deadline = time.monotonic() + 10
        while "still running" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    text = out.getvalue()
    assert re.search(r"\[1/1\] build still running, \d+s \(last: RUN pip install torch\)", text), text
    assert text.splitlines()[-1].startswith("[1/1] build done")


def test_live_progress_on_a_terminal_ends_with_plain_step_lines() -> None:
    out = io.StringIO()
    p = StepProgress(("doctor", "build"), stream=out, tty=True)
    with p.step("doctor"):
        p.say("asking the Docker daemon")
    with p.step("build"):
        pass
    text = out.getvalue()
    assert "asking the Docker daemon" in text
    assert re.search(r"\[1/2\] doctor done \d+\.\ds", text) and re.search(r"\[2/2\] build done", text)


# --------------------------------------------------------------------------- offline fallbacks


def test_configured_find_links_reads_pip_env_and_config(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    config = f":env:.find-links='{a}'\nglobal.find-links='{b} {tmp_path / 'missing'}'\nglobal.cert='/x'\n"
    got = configured_find_links({"PIP_FIND_LINKS": f"file://{a}"}, pip_config=config)
    assert got == (a, b)  # once each, in order; folders that do not exist left out
    assert configured_find_links({}, pip_config="") == ()


def test_local_framework_versions_match_python_platform_and_variant(tmp_path: Path) -> None:
    for name in (
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.14.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",  # other Python
        "torch-2.15.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",  # other variant
        "torch-2.11.0-cp311-cp311-manylinux_2_28_aarch64.whl",  # other machine
        "torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl",  # no label: kept
        "torchvision-0.28.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "not-a-wheel.whl",
    ):
        (tmp_path / name).write_bytes(b"")
    got = local_framework_versions([tmp_path], "torch", python="3.11", variant="cpu")
    assert got == [Version("2.13.0+cpu"), Version("2.12.0+cpu"), Version("2.10.0")]
    assert local_framework_versions([tmp_path], "jax", python="3.11", variant="cpu") == []


@pytest.fixture
def http_index() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(404)  # any answer means the index is there
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    server.shutdown()


def test_index_reachability(http_index: str) -> None:
    assert index_unreachable(http_index) is None
    server_gone = "http://127.0.0.1:9/whl/cpu"  # discard port: nothing listens
    why = index_unreachable(server_gone, timeout_s=2)
    assert why is not None and why.startswith(server_gone) and "refused" in why.lower()


# --------------------------------------------------------------------------- the CLI


def _no_gpu_host(tmp_path: Path) -> DoctorInputs:
    return DoctorInputs(
        nvml=FakeNvml([], init_error="NVML Shared Library Not Found"),
        run=FakeRunner(),
        root=tmp_path,
        which=lambda _name: None,
        env={},
        docker=lambda: DockerState(reachable=False, detail="not asked in a unit test"),
        installed=lambda _name: False,
    )


def test_up_require_gpu_on_a_host_without_gpu_exits_22(tmp_path: Path) -> None:
    spec = ROOT / "images" / "pytorch-train.yaml"
    res = CliRunner().invoke(cli, ["up", str(spec), "--require-gpu"], obj=_no_gpu_host(tmp_path))
    assert res.exit_code == 22, res.output
    assert "envbuilder: error: --require-gpu: this machine has no NVIDIA GPU" in res.output
    assert "hint: run it on a GPU host" in res.output
    assert "[1/6] doctor ..." in res.output and "no NVIDIA GPU: a CPU-only stack" in res.output


def test_up_refuses_a_missing_spec() -> None:
    res = CliRunner().invoke(cli, ["up", "images/no-such.yaml"])
    assert res.exit_code == 2 and "does not exist" in res.output


# --------------------------------------------------------------------------- Docker's habits


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--force", "img:1", "python", "-V"],
        ["run", "--force", "img:1", "--", "python", "-V"],
        ["run", "-t", "--force", "img:1", "python", "-V"],
        ["run", "img:1", "-e", "A=1", "--force", "--", "python", "-V"],  # the older form: ours up to --
    ],
)
def test_run_takes_everything_after_image_as_the_command(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import envbuilder.cli.run_cmd as run_cmd
    from envbuilder.run.launch import RunOptions

    seen: list[RunOptions] = []

    class Outcome:
        exit_code = 3

    def fake_run_image(options: RunOptions, **_kw: object) -> Outcome:
        seen.append(options)
        return Outcome()

    monkeypatch.setattr(run_cmd, "run_image", fake_run_image)
    monkeypatch.setattr(run_cmd, "find_certificates", lambda *_a: None)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 3, res.output  # the job's exit code, passed through
    assert seen[0].command == ("python", "-V") and seen[0].force is True


def test_version_names_the_command() -> None:
    import envbuilder

    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"envbuilder, version {envbuilder.__version__}"


def test_shell_completion_lists_commands() -> None:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "COMP_WORDS": "envbuilder ce",
        "COMP_CWORD": "1",
        "_ENVBUILDER_COMPLETE": "bash_complete",
    }
    res = subprocess.run(
        [sys.executable, "-m", "envbuilder"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0 and res.stdout.split() == ["plain,certify", "plain,certs"], res.stdout


# --------------------------------------------------------------------------- pipes


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    """`envbuilder resolve ... | head -2`: the reader closes the pipe before all is written."""
    import subprocess
    import sys

    argv = [
        sys.executable,
        "-m",
        "envbuilder",
        "resolve",
        "--driver",
        "580.95.05",
        "--gpu",
        "GTX 1080",
        "--explain",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as head does after its lines
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert first.startswith("host: driver 580.95.05") and "Traceback" not in err and "error" not in err


# --------------------------------------------------------------------------- D17: --base-image + --find-links


def test_up_with_a_given_base_falls_back_to_local_wheels_when_the_index_does_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 D17: `up --base-image B --find-links DIR` went to download.pytorch.org (exit 20):
    a given base skipped the whole fallback. Now its Python and OS are read from it, and an
    unreachable index pins the newest local wheel, built offline from the wheelhouse."""
    from fake_engine import FakeEngine

    from envbuilder.cli import up_cmd
    from envbuilder.engine import ImageInfo, RunResult
    from envbuilder.image import offline
    from envbuilder.image.spec import load_spec
    from envbuilder.pipeline import up as pipeline_up
    from envbuilder.pipeline.resolution import resolve_spec

    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    spec_path = tmp_path / "kill.yaml"
    spec_path.write_text('schema_version: 1\nname: kill\nframework: "torch"\n')
    spec = load_spec(spec_path)
    _matrix, resolution = resolve_spec(spec, None, (), (), True)
    stack = resolution.stack
    assert stack is not None and stack.index_url
    engine = FakeEngine(
        images={
            "envbuilder-test/debian:bookworm": ImageInfo(id="sha256:" + "b" * 64, tags=(), repo_digests=())
        }
    )
    engine.job = lambda spec, _on_stderr: RunResult(exit_code=0, stdout="3.11 debian12\n", stderr="")
    progress = StepProgress(up_cmd.STEPS, stream=io.StringIO(), tty=False)
    fallbacks = pipeline_up.choose_base(
        engine, stack.base_image, "envbuilder-test/debian:bookworm", progress.say
    )
    assert (fallbacks.base_image, fallbacks.base_python, fallbacks.base_os) == (
        "envbuilder-test/debian:bookworm",
        "3.11",
        "debian12",
    )
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / f"torch-{stack.version}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    asked: list[str] = []

    def unreachable(url: str, **_kw: object) -> str:
        asked.append(url)
        return f"{url}: Name or service not known"

    monkeypatch.setattr(offline, "index_unreachable", unreachable)
    fallbacks, request = pipeline_up.offline_request(spec, stack, fallbacks, (wheels,), True, progress.say)
    assert asked == [stack.index_url]
    assert request is not None and f"=={Version(stack.version).public}" in request.specifier
    assert request.python == "3.11" and fallbacks.find_links == (wheels,)
    assert fallbacks.wheelhouse == tmp_path / "cache" / "wheelhouse"
    assert any("index is unreachable" in n for n in fallbacks.notes)
    _matrix, again = resolve_spec(spec, None, (), (), True, request=request)
    assert again.stack is not None and again.stack.python == "3.11"
    # the stack's own base and an index that answers: nothing changes, nothing is asked again
    monkeypatch.setattr(offline, "index_unreachable", lambda url, **_kw: None)
    same, none = pipeline_up.offline_request(
        spec, stack, pipeline_up.Fallbacks(), (wheels,), True, progress.say
    )
    assert none is None and same == pipeline_up.Fallbacks()


# --------------------------------------------------------------------------- the stack announced


def test_up_announces_the_stack_it_builds_after_the_base_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26 item 9: no registry, so the stack's base cannot be pulled and a local base (Python
    3.11 on debian12) replaces it. The resolve step (after the base step now) and the final line
    name the stack built, and say which first answer it replaces."""
    from types import SimpleNamespace

    from fake_engine import FakeEngine
    from test_cli_certify import make

    import envbuilder.certify.certify
    import envbuilder.engine
    import envbuilder.engine.localbase
    import envbuilder.image.offline
    from envbuilder.cli import up_cmd
    from envbuilder.engine import ImageInfo
    from envbuilder.engine.localbase import LocalBase
    from envbuilder.image.build import stack_tag

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    local = ImageInfo(id="sha256:" + "c" * 64, tags=("envbuilder/local-base:bookworm",), repo_digests=())
    eng = FakeEngine(images={"envbuilder/local-base:bookworm": local})  # its pull fails: no registry
    monkeypatch.setattr(envbuilder.engine, "DockerEngine", lambda: eng)
    monkeypatch.setattr(
        envbuilder.engine.localbase,
        "ensure_local_base",
        lambda _engine, **_kw: LocalBase(
            ref="envbuilder/local-base:bookworm", image_id=local.id, python="3.11", os="debian12", made=False
        ),
    )
    monkeypatch.setattr(envbuilder.image.offline, "index_unreachable", lambda _url, **_kw: None)
    built: list[object] = []

    def fake_build(
        spec: object, _path: object, _matrix: object, resolution: object, *_a: object, **_kw: object
    ) -> object:
        stack = resolution.stack  # type: ignore[attr-defined]
        built.append(stack)
        return SimpleNamespace(
            tags=(f"envbuilder/pytorch-train:{stack_tag(stack)}",),
            image=SimpleNamespace(id="sha256:" + "d" * 64, size=1),
            lock_path=tmp_path / "lock.json",
        )

    monkeypatch.setattr(up_cmd, "build_for_up", fake_build)
    monkeypatch.setattr(
        envbuilder.certify.certify, "certify_image", lambda *_a, **_k: make("certified-cpu-only")
    )
    spec = ROOT / "images" / "pytorch-train.yaml"
    res = CliRunner().invoke(
        cli, ["up", str(spec), "--out", str(tmp_path / "out")], obj=_no_gpu_host(tmp_path)
    )
    assert res.exit_code == 0, res.output
    (built_stack,) = built
    stack = built_stack.id  # type: ignore[attr-defined]
    assert "py3.11" in stack and "debian12" in stack
    said = [ln.strip() for ln in res.output.splitlines() if ln.strip().startswith("stack ")]
    assert len(said) == 1 and said[0].startswith(
        f"stack {stack}, FROM envbuilder/local-base:bookworm (instead of "
    )
    assert "the base has Python 3.11 on debian12" in said[0]
    heads = [ln.split()[1] for ln in res.output.splitlines() if re.match(r"^\[\d/6\] \w+ \.\.\.$", ln)]
    assert heads == ["doctor", "base", "resolve", "build", "certify", "report"]
    final = res.output.strip().splitlines()[-1]
    assert final.startswith(f"envbuilder/pytorch-train:{stack_tag(built_stack)}  certified-cpu-only  ")  # type: ignore[arg-type]
    assert f"(stack {stack}, " in final
