"""Record tests/data/monitor/h200-*.json: envbuilder.run.monitor sampling synthetic torch
workloads on a real GPU (dense bf16 GEMMs; tiny kernels between waits; a leak; an 8 GiB buffer
freed and re-allocated each step; a job that doubles its batch until CUDA runs out of memory, whose
printed output is kept beside its series as oom.out.txt; a training loop whose own Python keeps
the GPU waiting (loop-bound); a DataLoader whose two workers cannot keep up (loader-starved)).
The monitor also samples this process and its children (the CPU the starved-GPU rule reads) and
the PCIe counters, and registers for NVML's Xid events (telemetry.json's `xid_events`, and in
`unsupported` why none can come). Everything also lands in one recordings.tar.gz (the device returns 8 files).
Run from the repository root on a GPU:
    OUT=/tmp/mon python3 tests/data/monitor/record_workloads.py [WORKLOAD ...]
"""

# ruff: noqa
# mypy: ignore-errors
import json, os, sys, tarfile, time
from pathlib import Path

sys.path.insert(0, os.getcwd())
import torch
from envbuilder.run.diagnosis import diagnose, format_diagnosis
from envbuilder.run.joblog import read_job_output
from envbuilder.run.monitor import Monitor, write_monitor_files

out = Path(os.environ.get("OUT", "/tmp"))
torch.cuda.init()


def mats():
    return (
        torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16),
        torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16),
    )


def dense(sec):
    a, b = mats()
    t = time.time()
    while time.time() - t < sec:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()


def starved(sec):
    a, b = mats()
    t = time.time()
    while time.time() - t < sec:
        a[:512, :512] @ b[:512, :512]
        torch.cuda.synchronize()
        time.sleep(0.03)  # "waiting for the data loader"


def leak(sec):
    a, b = mats()
    keep, t = [], time.time()
    while time.time() - t < sec:
        keep.append(torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda"))  # +256 MiB kept
        for _ in range(5):
            a @ b
        torch.cuda.synchronize()
        time.sleep(0.2)
    return keep


def cached(sec):
    a, b = mats()
    t = time.time()
    while time.time() - t < sec:
        x = torch.empty(8 * 2**30, dtype=torch.uint8, device="cuda")  # 8 GiB, freed each step
        for _ in range(5):
            a @ b
        del x
        torch.cuda.synchronize()
        time.sleep(0.05)


def loop_bound(sec):
    """The loop's own CPU work: tiny ops launched one by one from Python, a host sync each step."""
    x = torch.randn(64, 64, device="cuda")
    t = time.time()
    while time.time() - t < sec:
        for _ in range(50):
            x = torch.tanh(x @ x * 0.01 + 1.0)
        float(x.sum())  # .item()-style sync


def loader_starved(sec):
    """A DataLoader with two workers doing per-sample CPU work the GPU outruns."""
    import numpy as np

    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 10**6

        def __getitem__(self, i):
            rng = np.random.default_rng(i)
            img = rng.standard_normal((3, 96, 96)).astype("float32")
            for _ in range(6):  # "decode and augment" on the CPU
                img = np.tanh(img * 1.01)
            return torch.from_numpy(img), i % 5

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 96 * 96, 5)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Slow(), batch_size=64, num_workers=2, pin_memory=True)
    t = time.time()
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if time.time() - t > sec:
            break


def family():
    """This process and its descendants (host PIDs), as `docker top` lists a container's."""
    me, kids = os.getpid(), {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rpartition(")")[2].split()[1])
            except OSError:
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [me]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


OOM_LINES = []


def oom(sec):
    """The issue's job: grow the batch until CUDA OOM, printing what fit (as a training script does)."""
    w = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    keep, b = [], 1 << 14
    try:
        while True:
            x = torch.randn(b, 8192, device="cuda", dtype=torch.bfloat16)
            keep.append(x @ w)  # activations kept for the backward pass
            torch.cuda.synchronize()
            OOM_LINES.append(f"batch {b} ok, {torch.cuda.memory_allocated() / 2**30:.1f} GiB allocated")
            b *= 2
            time.sleep(0.3)
    except torch.OutOfMemoryError as e:
        OOM_LINES.append(f"trying batch {b}")
        OOM_LINES.append(f"torch.OutOfMemoryError: {e}".splitlines()[0])
    time.sleep(0.6)  # the monitor sees the memory at the ceiling before the job lets go
    return keep


WORKLOADS = {
    "dense-bf16": dense,
    "starved": starved,
    "leak": leak,
    "cached": cached,
    "oom": oom,
    "loop-bound": loop_bound,
    "loader-starved": loader_starved,
}
res = {}
for name in sys.argv[1:] or list(WORKLOADS):
    fn = WORKLOADS[name]
    torch.cuda.empty_cache()
    time.sleep(1.0)
    m = Monitor(interval=0.2)
    m.watch_processes(family)
    m.start()
    time.sleep(0.6)
    kept = fn(12)
    time.sleep(0.4)
    gpus = m.stop()
    del kept
    if name == "oom":
        (out / "oom.out.txt").write_text("\n".join(OOM_LINES) + "\n")
        f = diagnose(
            gpus,
            output=read_job_output("\n".join(OOM_LINES)),
            exit_code=1,
            processes=m.processes(),
            xids=m.xids(),
        )
    else:
        f = diagnose(gpus, processes=m.processes(), xids=m.xids())
    print(
        f"== {name}: {len(gpus[0].series['t'])} samples, mem {min(gpus[0].series['mem_used_mib'])}-{max(gpus[0].series['mem_used_mib'])} MiB"
    )
    print(format_diagnosis(f), flush=True)
    write_monitor_files(
        out / name,
        gpus,
        f,
        {"workload": name},
        processes=m.processes_record(),
        xids=m.xids(),
        unsupported=m.unsupported(),  # Xid events included: whether this GPU delivers them
    )
    res[name] = [x.rule for x in f]
print(json.dumps(res))
with tarfile.open(out / "recordings.tar.gz", "w:gz") as tar:
    for name in res:
        tar.add(out / name, arcname=name)
    if (out / "oom.out.txt").exists():
        tar.add(out / "oom.out.txt", arcname="oom.out.txt")
