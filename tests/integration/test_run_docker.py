"""`envbuilder run` for real: build the bundled torch CPU image, certify it (CPU path, --quick), run
commands in it (output streamed, exit code passed through, mounts/env/workdir/ulimits applied;
Ctrl-C and SIGTERM stop the job, remove the container and log the run; after a SIGKILL of the
client the next command's janitor removes the container and logs the run as orphaned), then
rebuild it with a change: the new image ID has no certificate and run refuses it (exit 12) unless
--force, which the run log records.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.certify.jit_cache import CACHE_ENV, cache_env, volume_name
from envbuilder.engine import ContainerSpec, DockerEngine, Volume
from envbuilder.image.metadata import JIT_CACHE_DIR, read_metadata

pytestmark = pytest.mark.docker

HELLO = "print('hello from envbuilder')"


def build(spec: Path, base_image: str, wheelhouse: Path, tag: str, lock: Path) -> None:
    res = envbuilder_cli(
        "build", str(spec), "--cpu", "--base-image", base_image, "--wheelhouse", str(wheelhouse),
        "--tag", tag, "--lock-out", str(lock),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.fixture(scope="module")
def certified(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Path, Path]]:
    """(tag, data dir, work dir): the CPU image built by the real CLI and certified into a
    private store (ENVBUILDER_DATA_DIR, inherited by every envbuilder_cli() of this module)."""
    work = tmp_path_factory.mktemp("run-it")
    data = work / "data"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVBUILDER_DATA_DIR", str(data))
        spec = write_spec(work / "images", "run-it")
        tag = f"envbuilder-it/run:{run_id}"
        build(spec.path, base_image, wheelhouse, tag, work / "lock.json")
        cleanup_refs.append(tag)
        # --quick: run needs a certificate, not a training benchmark (test_certify_docker.py runs
        # the full CPU path); it keeps this module fast and independent of the machine's load.
        res = envbuilder_cli("certify", tag, "--gpu-access", "none", "--quick")
        assert res.returncode == 0, res.stderr[-3000:]
        yield tag, data, work


def runs_log(data: Path) -> list[dict[str, object]]:
    path = data / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_run_streams_output_and_passes_the_exit_code(certified: tuple[str, Path, Path]) -> None:
    tag, data, _ = certified
    ok = envbuilder_cli("run", tag, "--", "python3", "-c", HELLO)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert ok.stdout.strip().splitlines()[-1] == "hello from envbuilder"
    assert "covers this run (certified-cpu-only); GPU access: none" in ok.stderr
    three = envbuilder_cli("run", tag, "--", "python3", "-c", "import sys; sys.exit(3)")
    assert three.returncode == 3, three.stderr[-2000:]
    entries = runs_log(data)
    assert [(e["outcome"], e["exit_code"]) for e in entries[-2:]] == [("exited", 0), ("exited", 3)]


def test_run_applies_mounts_env_workdir_and_training_limits(
    certified: tuple[str, Path, Path], tmp_path: Path
) -> None:
    tag, _, _ = certified
    (tmp_path / "f.txt").write_text("mounted")
    tmp_path.chmod(0o755)
    probe = (
        "import os, resource, shutil; "
        "print(os.environ['GREETING'], os.getcwd(), open('f.txt').read(), "
        "resource.getrlimit(resource.RLIMIT_STACK)[0], shutil.disk_usage('/dev/shm').total > 2**26, "
        "resource.getrlimit(resource.RLIMIT_MEMLOCK)[0] == resource.RLIM_INFINITY)"
    )
    res = envbuilder_cli(
        "run", tag, "-v", f"{tmp_path}:/data:ro", "-e", "GREETING=hi", "-w", "/data", "--shm-size", "256m",
        "--", "python3", "-c", probe,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    *seen, memlock_unlimited = res.stdout.strip().splitlines()[-1].split(" ")
    assert seen == ["hi", "/data", "mounted", "67108864", "True"]
    # memlock=-1 unless the runtime refuses it (nested or rootless Docker), which is then said
    refused = "the container runtime refuses the memlock ulimit (error setting rlimit type 8:" in res.stderr
    assert (memlock_unlimited == "True") != refused, res.stderr[-2000:]


def test_run_without_a_command_runs_the_images_cmd(certified: tuple[str, Path, Path]) -> None:
    """As `docker run -i IMAGE`: the image's CMD (bash, behind the driver-check entrypoint) runs,
    here reading its commands from stdin; the image's own user (uid 1000)."""
    tag, data, _ = certified
    res = subprocess.run(
        [sys.executable, "-m", "envbuilder", "run", "-i", tag],
        input="echo cmd-ran-as-$(id -u) $0\n", capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "cmd-ran-as-1000 /bin/bash"
    assert runs_log(data)[-1]["command"] == []


def test_run_as_the_caller_makes_a_bind_mount_writable(
    certified: tuple[str, Path, Path], tmp_path: Path
) -> None:
    """-u $(id -u):$(id -g): the job writes into the caller's folder, and what it writes is theirs.
    Without it the image's uid 1000 cannot write into a folder of another user's (mode 755)."""
    tag, _, _ = certified
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o755)
    uid, gid = os.getuid(), os.getgid()
    job = "import os; open('made.txt', 'w').write('x'); print(os.getuid(), os.getgid())"
    res = envbuilder_cli(
        "run", "-u", f"{uid}:{gid}", "-v", f"{out}:/out", "-w", "/out", "--rm", tag, "python3", "-c", job
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == f"{uid} {gid}"
    made = (out / "made.txt").stat()
    assert (made.st_uid, made.st_gid) == (uid, gid)
    if uid != 1000:
        denied = envbuilder_cli("run", "-v", f"{out}:/out", tag, "touch", "/out/denied")
        assert denied.returncode == 1 and "Permission denied" in denied.stderr, denied.stderr[-2000:]
        assert not (out / "denied").exists()


def test_the_images_jit_cache_volume_is_its_users_and_outlives_the_container(
    certified: tuple[str, Path, Path], engine: DockerEngine
) -> None:
    """What certify and run mount in a GPU container (certify/jit_cache.py), on the real daemon and
    the image the real CLI built: the image declares its JIT cache folder and its user owns it, so
    the volume named after the image's ID starts writable by uid 1000, and what one container
    writes there the next finds, the frameworks' cache folders below it too. (The GPU grant itself
    needs a GPU: the spec here is the volume and variables training_container adds, on a container
    without GPUs.)"""
    tag, _, _ = certified
    info = engine.inspect_image(tag)
    assert info is not None and read_metadata(info).jit_cache == JIT_CACHE_DIR
    vol = Volume(name=volume_name(info.id, "run"), target=JIT_CACHE_DIR)
    # the variables training_container sets: CUDA's cache at the top, torch.compile's below it
    # (which Inductor makes as it does /tmp/torchinductor_USER)
    env = cache_env(JIT_CACHE_DIR, {})
    write = (
        f'id -u; touch "${CACHE_ENV}/entry"; mkdir -p "$TORCHINDUCTOR_CACHE_DIR"; '
        f'touch "$TORCHINDUCTOR_CACHE_DIR/graph"; ls "${CACHE_ENV}"'
    )
    spec = ContainerSpec(image=info.id, command=("sh", "-c", write), env=env, volumes=(vol,))
    try:
        first = engine.run(spec, timeout_s=120)
        assert first.exit_code == 0, first.stderr[-2000:]
        assert first.stdout.split() == ["1000", "entry", "torchinductor"]
        read = ContainerSpec(image=info.id, command=("ls", "-lnR", JIT_CACHE_DIR), volumes=(vol,), env=env)
        second = engine.run(read, timeout_s=120)
        assert second.exit_code == 0, second.stderr[-2000:]
        for name in (" entry", " graph"):
            (line,) = [x for x in second.stdout.splitlines() if x.endswith(name)]
            assert line.split()[2:4] == ["1000", "1000"]  # written by the image's user, kept
    finally:
        subprocess.run(["docker", "volume", "rm", "-f", vol.name], capture_output=True, check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVER = (
    "import socket\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('0.0.0.0', 8000)); s.listen(1); print('listening', flush=True)\n"
    "c, _ = s.accept(); c.sendall(b'hello through -p'); c.close()"
)


def test_run_publishes_a_port_under_the_name_given(certified: tuple[str, Path, Path], run_id: str) -> None:
    tag, _, _ = certified
    port, name = _free_port(), f"envbuilder-it-run-{run_id}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "envbuilder", "run", "-p", f"127.0.0.1:{port}:8000", "--name", name, tag,
         "python3", "-c", SERVER],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
        listed = ""
        for _ in range(50):  # the job can print before the daemon marks its container running
            listed = subprocess.run(
                ["docker", "ps", "--filter", f"name=^{name}$", "--format", "{{.Names}} {{.Ports}}"],
                capture_output=True, text=True, check=False,
            ).stdout.strip()  # fmt: skip
            if listed:
                break
            time.sleep(0.2)
        assert listed == f"{name} 127.0.0.1:{port}->8000/tcp", listed
        got = b""
        for _ in range(50):  # the daemon's proxy may take a moment after the job listens
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                    got = conn.recv(100)
                if got:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert got == b"hello through -p"
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"name=^{name}$"], capture_output=True, text=True, check=False
    )
    assert left.stdout.strip() == ""  # removed, as always (--rm or not)


def test_run_tty_and_where_our_options_go(certified: tuple[str, Path, Path]) -> None:
    """-t before IMAGE gives the job a terminal; after IMAGE it is the command's, as in docker
    (the entrypoint cannot exec `-t`), and run says where its options go. A user the image lacks
    is docker's refusal (exit 2); --gpus with --gpu-access none is refused before anything starts."""
    tag, _, _ = certified
    tty = envbuilder_cli("run", "-t", tag, "python3", "-c", "import sys; print('tty', sys.stdout.isatty())")
    assert tty.returncode == 0, tty.stderr[-2000:]
    assert "tty True" in tty.stdout
    after = envbuilder_cli("run", tag, "-t", "python3", "-V")
    assert after.returncode != 0 and "Python 3" not in after.stdout
    assert "envbuilder: note: '-t' after IMAGE is part of the command (as with docker run)" in after.stderr
    nobody = envbuilder_cli("run", "-u", "no-such-user", tag, "true")
    assert nobody.returncode == 2, nobody.stderr[-2000:]
    assert "unable to find user no-such-user" in nobody.stderr and "-u, -p, --name" in nobody.stderr
    gpus = envbuilder_cli("run", "--gpu-access", "none", "--gpus", "device=0", tag, "true")
    assert gpus.returncode == 2, gpus.stderr[-2000:]
    assert "envbuilder: error: --gpus device=0 asks for GPUs, --gpu-access none for none" in gpus.stderr


SLEEPER = (
    "import signal, sys, time\n"
    "def got(n, f): print('got', signal.Signals(n).name, flush=True); sys.exit(0)\n"
    "signal.signal(signal.SIGINT, got); signal.signal(signal.SIGTERM, got)\n"
    "print('started', flush=True); time.sleep(120)"
)


def _start_sleeper(tag: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "envbuilder", "run", tag, "--", "python3", "-c", SLEEPER],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"
    return proc


def _run_containers(tag: str) -> list[str]:
    """This module's run containers (others' tests may run their own meanwhile)."""
    left = subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", "label=io.envbuilder.run=1",
         "--filter", f"ancestor={tag}"],
        capture_output=True, text=True,
    )  # fmt: skip
    return left.stdout.split()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_stops_the_job_removes_the_container_and_logs_the_exit_code(
    certified: tuple[str, Path, Path], signum: signal.Signals, code: int
) -> None:
    tag, data, _ = certified
    before = len(runs_log(data))
    proc = _start_sleeper(tag)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-2000:]
    # the job itself got the signal (Ctrl-C as SIGINT, not docker stop's SIGTERM): it was stopped
    assert out.strip() == f"got {signum.name}"
    assert _run_containers(tag) == []
    (line,) = runs_log(data)[before:]
    assert (line["outcome"], line["exit_code"]) == ("interrupted", code)


def test_after_a_sigkill_of_the_client_the_next_command_records_the_orphaned_run(
    certified: tuple[str, Path, Path],
) -> None:
    tag, data, _ = certified
    before = len(runs_log(data))
    proc = _start_sleeper(tag)
    proc.kill()
    proc.communicate(timeout=60)
    (left,) = _run_containers(tag)  # the client is gone, the job runs on
    assert runs_log(data)[before:] == []  # and nothing could write its line
    # Another user's envbuilder (another data folder) reaching the daemon meanwhile leaves it to
    # this folder's own next command (issue 23 item 13: its janitor took it, and this test failed).
    other = data.parent / "another-users-data"
    theirs = subprocess.run(
        [sys.executable, "-c", "from envbuilder.engine import DockerEngine; DockerEngine().ping()"],
        env={**os.environ, "ENVBUILDER_DATA_DIR": str(other)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert theirs.returncode == 0 and left[:12] not in theirs.stderr, theirs.stderr
    assert _run_containers(tag) == [left] and not (other / "runs.jsonl").exists()
    nxt = envbuilder_cli("run", tag, "--", "python3", "-c", HELLO)
    assert nxt.returncode == 0, nxt.stderr[-2000:]
    assert f"({left[:12]}, running), left by an envbuilder run that is gone" in nxt.stderr
    orphan, own = runs_log(data)[before:]
    assert (orphan["outcome"], orphan["exit_code"], orphan["container_status"]) == (
        "orphaned",
        137,
        "running",
    )
    assert orphan["command"] == ["python3", "-c", SLEEPER] and orphan["recorded_by"] == "janitor"
    assert isinstance(orphan["seconds"], float) and orphan["seconds"] > 0
    assert f"recorded run {orphan['run_id']} in {data / 'runs.jsonl'} as orphaned" in nxt.stderr
    assert (own["outcome"], own["exit_code"]) == ("exited", 0)
    assert _run_containers(tag) == []


def test_a_rebuilt_image_is_refused_until_forced(
    certified: tuple[str, Path, Path],
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
) -> None:
    tag, data, work = certified
    before = engine.inspect_image(tag)
    spec = work / "images" / "run-it.yaml"
    spec.write_text(spec.read_text() + 'env:\n  RUN_IT_CHANGE: "1"\n')
    build(spec, base_image, wheelhouse, tag, work / "lock2.json")
    after = engine.inspect_image(tag)
    assert before is not None and after is not None and after.id != before.id
    refused = envbuilder_cli("run", tag, "--", "python3", "-c", HELLO)
    assert refused.returncode == 12, refused.stderr[-2000:]
    assert (
        f"envbuilder: error: refusing to run: no certificate for image {after.id} ({tag})" in refused.stderr
    )
    assert f"hint: re-certify the image on this host: envbuilder certify {tag}" in refused.stderr
    assert "hello from envbuilder" not in refused.stdout
    forced = envbuilder_cli("run", "--force", tag, "--", "python3", "-c", HELLO)
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert "hello from envbuilder" in forced.stdout
    assert "--force: running although no certificate for image" in forced.stderr
    last = runs_log(data)[-2:]
    assert [e["outcome"] for e in last] == ["refused", "exited"]
    assert last[1]["forced"] is True and last[1]["image"] == after.id


OOM_JOB = """
import sys, time
t = time.time()
while time.time() - t < 3.5:  # the training loop, busy on one core
    pass
print("batch 512 ok", flush=True)
print("trying batch 1024", flush=True)
time.sleep(0.3)  # stdout and stderr are two pipes: the daemon's log orders them as they arrive
print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", file=sys.stderr, flush=True)
sys.exit(1)
"""


def test_monitor_reads_the_jobs_output_and_processes(
    certified: tuple[str, Path, Path], tmp_path: Path
) -> None:
    """--monitor without a GPU: the real daemon's log of the container gives the job's output (the
    terminal still got it), `docker top` + /proc give its processes; the diagnosis names the OOM
    and the batch that last ran, and the files are written side by side."""
    tag, _, _ = certified
    folder = tmp_path / "mon"
    # --force: the certificate is not what this test is about, and the rebuild test above replaces
    # the module's certified image under the same tag (in file order it runs first).
    res = envbuilder_cli(
        "run", "--force", tag, "--monitor", "--monitor-dir", str(folder), "--", "python3", "-c", OOM_JOB
    )
    assert res.returncode == 1, res.stderr[-2000:]
    assert "torch.OutOfMemoryError" in res.stderr and "batch 512 ok" in res.stdout  # streamed as ever
    assert "no GPU telemetry" in res.stderr
    output = (folder / "output.txt").read_text()
    assert "batch 512 ok" in output and "torch.OutOfMemoryError: CUDA out of memory" in output
    diagnosis = (folder / "diagnosis.txt").read_text()
    assert diagnosis.startswith("[warn] job out-of-memory:"), diagnosis
    assert "batch 512 ran, 1024 did not" in diagnosis
    doc = json.loads((folder / "telemetry.json").read_text())
    procs = doc["processes"]["processes"]
    assert procs and any(p["comm"].startswith("python") for p in procs), doc["processes"]
    busiest = max(procs, key=lambda p: p["cpu_s"][-1] - p["cpu_s"][0] if len(p["cpu_s"]) > 1 else 0)
    assert len(busiest["t"]) >= 2 and busiest["cpu_s"][-1] > busiest["cpu_s"][0]
    assert [f["rule"] for f in doc["diagnosis"]] == ["out-of-memory"]
