"""One rank of the multi_gpu step (step.py launches one process per GPU):

`python -m <package>.multigpu.worker --rank R --world N --backend nccl|gloo --out-dir DIR ...`

1. rank 0 alone, before the process group exists: the single-GPU baseline (the DDP config, no DDP);
2. init_process_group (the parent's TCPStore at MASTER_ADDR/MASTER_PORT, every rank a client,
   with the rendezvous timeout; the collectives' timeout in force);
3. all-reduce sweep 8 B .. max (x2 steps): time per size, then a value check (rank r gives r+1);
4. DDP training of the same ResNet-18 on the synthetic data, then rank 0's parameters are
   broadcast and compared with every rank's own (max abs difference must be 0).
When a reduced value is wrong, a solo round per rank (only rank k contributes) names whose
contribution arrives wrong, and the DDP run is skipped.
Each rank writes rank{R}.json into DIR (even on error; atomically: its presence means the rank
finished its work); the parent merges them.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..children import exit_with_parent
from ..workloads.config import RunConfig
from .env import FAULT_ENV, fault_plan
from .sweep import CHECK_CHUNK_BYTES, CPU_MAX_BYTES, GPU_MAX_BYTES, expected_sum, size_cap, sweep_sizes

T0 = time.perf_counter()  # before torch is imported: phase_s.start counts the import
NO_FAILURE = float(1 << 62)  # "no size failed" in the all-reduce MIN of the first failing size

if TYPE_CHECKING:  # torch is imported inside main()'s try, so a broken install is still reported
    import torch
    from torch import nn

    from ..workloads.pytorch.data import Dataset


def mismatch(
    got: torch.Tensor,
    want: torch.Tensor | float | Callable[[int, int], torch.Tensor],
    *,
    exact: bool,
    rel_tol: float = 1e-6,
    chunk: int = 0,
) -> str:
    """'' if the 1-D tensor got equals want, else what is wrong. want: a tensor like got, a number,
    or want(start, n) -> the expected got[start:start + n]. exact: integers, bit-equal; else
    |got - want| <= rel_tol * |want| (NaN counts as wrong). Works through got in chunks of `chunk`
    elements (default: CHECK_CHUNK_BYTES of it), so an 8 GiB buffer needs no 8 GiB temporaries."""
    import torch

    step = chunk or max(1, CHECK_CHUNK_BYTES // max(1, got.element_size()))
    n_bad, first = 0, ""
    for start in range(0, got.numel(), step):
        part = got[start : start + step]
        w: torch.Tensor | float
        if callable(want):
            w = want(start, part.numel())
        elif torch.is_tensor(want):
            w = want[start : start + step]
        else:
            w = want
        tol = rel_tol * (w.abs() if torch.is_tensor(w) else abs(w))
        bad = part.ne(w) if exact else ~((part - w).abs() <= tol)  # a NaN is never <= tol
        k = int(bad.sum())
        if k and not first:
            i = int(torch.argmax(bad.to(torch.uint8)))
            wi = w[i].item() if torch.is_tensor(w) else w
            first = f"first at index {start + i}: got {part[i].item()}, want {wi}"
        n_bad += k
    return f"{n_bad} of {got.numel()} elements wrong ({first})" if n_bad else ""


def int_pattern(device: Any) -> Callable[[int, int], torch.Tensor]:
    """pattern(start, n): elements start..start+n-1 of (i mod 7) + 1 as int32, made chunk by chunk."""
    import torch

    def pattern(start: int, n: int) -> torch.Tensor:
        i = torch.arange(start, start + n, dtype=torch.int64, device=device)
        return i.remainder_(7).add_(1).to(torch.int32)

    return pattern


def _log(rank: int, msg: str) -> None:
    print(f"[multi_gpu rank {rank}] {msg}", file=sys.stderr, flush=True)


class Worker:
    def __init__(self, a: argparse.Namespace) -> None:
        import torch

        self.a = a
        self.rank, self.world = a.rank, a.world
        self.cuda = a.backend == "nccl"
        self.cpu_test = a.mode == "cpu-test"
        # The test hook (env.py): which faults this rank injects (none in a real run).
        self.faults = fault_plan(os.environ.get(FAULT_ENV, ""), self.world)[0].get(self.rank, set())
        if self.cuda:
            torch.cuda.set_device(self.rank)
            torch.backends.cudnn.benchmark = True
            self.device = torch.device("cuda", self.rank)
        else:
            torch.set_num_threads(1)  # N ranks share the CPUs
            self.device = torch.device("cpu")
        self.out: dict[str, Any] = {"rank": self.rank, "world": self.world, "backend": a.backend}
        self.out["phase_s"] = {"start": time.perf_counter() - T0}  # seconds each phase took
        self.first_bad_bytes = NO_FAILURE  # the smallest message size whose reduced values were wrong
        # What this rank inherited (the parent passes the environment through, never sets these).
        self.out["nccl_env"] = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_NCCL_"))}

    # ---- helpers -------------------------------------------------------------------------
    def sync(self) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize(self.device)

    def tensor(self, values: list[float]) -> torch.Tensor:
        """float64 values on this rank's device (the scalars the ranks agree on)."""
        import torch

        return torch.tensor(values, dtype=torch.float64, device=self.device)

    def config(self) -> RunConfig:
        import torch

        if self.cpu_test:
            return RunConfig(name="ddp", width=8, batch=16, steps=6, warmup=2, device="cpu", seed=self.a.seed)
        amp = "bf16" if torch.cuda.is_bf16_supported() else None  # fp16 would need a GradScaler
        return RunConfig(
            name="ddp", batch=256, steps=40, warmup=10, amp=amp, channels_last=True, device="cuda",
            seed=self.a.seed,
        )  # fmt: skip

    # ---- training (the baseline and the DDP run share this loop) -------------------------
    def train(
        self,
        runner: Callable[[torch.Tensor], torch.Tensor],
        model: nn.Module,
        data: Dataset,
        cfg: RunConfig,
        barrier: Callable[[], object] | None = None,
    ) -> dict[str, Any]:
        import torch
        from torch import nn

        from ..workloads.pytorch.data import normalize
        from ..workloads.pytorch.models import memory_format
        from ..workloads.pytorch.train import amp_dtype

        fmt = memory_format(cfg.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=cfg.learning_rate(), momentum=0.9, weight_decay=5e-5)
        warm_lr = cfg.lr_warmup_steps()
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / warm_lr))
        dt = amp_dtype(cfg.amp)
        # Each rank draws its own samples (as a DistributedSampler shards the data).
        gen = torch.Generator(device=self.device).manual_seed(cfg.seed + 17 + 1000 * self.rank)
        losses = torch.zeros(cfg.steps, device=self.device)
        n_train = len(data.train)

        def one_step(i: int) -> None:
            idx = torch.randint(0, n_train, (cfg.batch,), generator=gen, device=self.device)
            x = normalize(data.train.images[idx]).contiguous(memory_format=fmt)
            with torch.autocast(self.device.type, dtype=dt or torch.float32, enabled=dt is not None):
                loss = nn.functional.cross_entropy(runner(x), data.train.labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses[i] = loss.detach().float()

        for i in range(cfg.warmup):
            one_step(i)
        self.sync()
        if barrier is not None:
            barrier()
        t0 = time.perf_counter()
        for i in range(cfg.warmup, cfg.steps):
            one_step(i)
        self.sync()
        wall = time.perf_counter() - t0
        timed = cfg.steps - cfg.warmup
        ls = [float(v) for v in losses.cpu()]
        return {
            "wall_s": wall,
            "steps_timed": timed,
            "images_per_s": cfg.batch * timed / wall if wall > 0 else 0.0,
            "loss_first": ls[0],
            "loss_last": ls[-1],
            "losses_finite": all(v == v and abs(v) != float("inf") for v in ls),
        }

    def build(self, cfg: RunConfig) -> tuple[nn.Module, dict[str, Any]]:
        import torch

        from ..workloads.pytorch.data import NUM_CLASSES
        from ..workloads.pytorch.models import build_model, place

        torch.manual_seed(cfg.seed)
        model, info = build_model(cfg.arch, NUM_CLASSES, width=cfg.width)
        return place(model, self.device, cfg.channels_last), info

    # ---- the phases ----------------------------------------------------------------------
    def run(self) -> None:
        import torch.distributed as dist

        from ..workloads.pytorch.data import make_dataset

        cfg = self.config()
        size, n_train = (32, 256) if self.cpu_test else (224, 2048)
        data = make_dataset(size, n_train, 16, seed=self.a.seed, device=self.device)  # same seed everywhere
        self.out["ddp_config"] = {**cfg.to_json(), "image_size": size, "per_rank_batch": cfg.batch}
        self.mark("data")
        if self.rank == 0:
            model, _ = self.build(cfg)
            self.out["baseline"] = self.train(model, model, data, cfg)
            _log(0, f"single-device baseline {self.out['baseline']['images_per_s']:.0f} img/s")
            del model
            self.mark("baseline")
        kw: dict[str, Any] = {"timeout": timedelta(seconds=self.a.timeout)}
        if self.cuda and "device_id" in inspect.signature(dist.init_process_group).parameters:
            kw["device_id"] = self.device  # eager NCCL communicator: init errors surface here
        t0 = time.perf_counter()
        # The rendezvous waits for rank 0's baseline run, which a slow or loaded host makes long:
        # its own timeout (the parent's deadline), not the collectives' (which may be seconds), and
        # before init_process_group, whose own waits on the store take the collectives' timeout.
        store = dist.TCPStore(  # type: ignore[attr-defined]  # re-exported under is_available()
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            self.world,
            False,  # the parent hosts the store (step.host_store)
            timeout=timedelta(seconds=max(self.a.timeout, self.a.rendezvous_timeout)),
        )
        if store.add("envbuilder/arrived", 1) == self.world:
            store.set("envbuilder/all-arrived", "1")
        store.wait(["envbuilder/all-arrived"])
        dist.init_process_group(self.a.backend, store=store, rank=self.rank, world_size=self.world, **kw)
        self.out["init_s"] = time.perf_counter() - t0
        self.sweep()
        # Every rank must take the same branch, or the next collective hangs: agree on the
        # smallest size any rank found wrong.
        bad = self.tensor([self.first_bad_bytes])
        dist.all_reduce(bad, op=dist.ReduceOp.MIN)
        if float(bad.item()) < NO_FAILURE:
            self.solo_rounds(int(bad.item()))
        if "hang" in self.faults:
            _log(self.rank, "fault injection: hanging before the DDP run")
            time.sleep(10**6)
        if float(bad.item()) < NO_FAILURE:
            self.out["ddp_skipped"] = "all-reduce values wrong: the DDP run would mean nothing"
        else:
            self.ddp(cfg, data)
        done = self.tensor([1.0])
        dist.all_reduce(done)  # the last collective: a rank that never gets here times the others out
        # Only after success: after an error a broken communicator can hang in the teardown.
        dist.destroy_process_group()

    def sweep(self) -> None:
        import torch
        import torch.distributed as dist

        from ..workloads.pytorch.train import event_seconds

        self.mark("init")
        requested = CPU_MAX_BYTES if self.cpu_test else GPU_MAX_BYTES
        free = -1.0
        if self.cuda:
            torch.cuda.empty_cache()  # rank 0's baseline left its blocks cached
            free = float(torch.cuda.mem_get_info(self.device)[0])
            torch.cuda.reset_peak_memory_stats(self.device)
        least = self.tensor([free])
        dist.all_reduce(least, op=dist.ReduceOp.MIN)  # every rank must sweep the same sizes
        cap = size_cap(requested, int(least.item()) if self.cuda else None)
        self.out["sweep_cap"] = cap
        sizes = sweep_sizes(cap["max_bytes"])
        warm, iters = (2, 5) if self.cpu_test else (5, 20)  # nccl-tests defaults: -w 5 -n 20
        buf = torch.zeros(sizes[-1] // 4, dtype=torch.float32, device=self.device)
        times: list[float] = []
        problems: list[str] = []
        for nbytes in sizes:
            x = buf[: nbytes // 4]
            x.zero_()
            for _ in range(warm):
                dist.all_reduce(x)
            self.sync()
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    dist.all_reduce(x)
                end.record()
                end.synchronize()
                times.append(event_seconds(start, end) / iters)
            else:
                t0 = time.perf_counter()
                for _ in range(iters):
                    dist.all_reduce(x)
                times.append((time.perf_counter() - t0) / iters)
            x.fill_(self.contribution(self.rank))
            dist.all_reduce(x)
            p = mismatch(x, float(expected_sum(self.world)), exact=False)
            if p:
                problems.append(f"float32 {nbytes} B: {p}")
                self.first_bad_bytes = min(self.first_bad_bytes, float(nbytes))
        # Exact integer check at the largest size, position-dependent (a misplaced chunk shows),
        # filled and checked chunk by chunk (no buffer-sized pattern).
        xi = buf.view(torch.int32)
        pattern = int_pattern(self.device)
        step = CHECK_CHUNK_BYTES // 4
        extra = 1 if "allreduce" in self.faults else 0
        for at in range(0, xi.numel(), step):
            part = xi[at : at + step]
            part.copy_(pattern(at, part.numel())).mul_(self.rank + 1).add_(extra)
        dist.all_reduce(xi)
        total = expected_sum(self.world)
        p = mismatch(xi, lambda at, n: pattern(at, n).mul_(total), exact=True)
        if p:
            problems.append(f"int32 {sizes[-1]} B: {p}")
            self.first_bad_bytes = min(self.first_bad_bytes, float(sizes[-1]))
        if self.cuda:
            self.out["sweep_memory"] = {
                "free_before_bytes": int(free),
                "free_at_largest_bytes": int(torch.cuda.mem_get_info(self.device)[0]),
                "peak_allocated_bytes": int(torch.cuda.max_memory_allocated(self.device)),
            }
        del buf, xi, x
        if self.cuda:
            torch.cuda.empty_cache()  # hand the buffer back before the DDP run
        t = self.tensor(times)
        dist.all_reduce(t)  # nccl-tests' default: the time averaged over ranks
        avg = [float(x) / self.world for x in t.tolist()]
        self.out["sweep"] = [{"bytes": b, "seconds": avg[i]} for i, b in enumerate(sizes)]
        self.out["value_problems"] = problems
        self.out["sweep_iters"] = {"warmup": warm, "iters": iters, "dtype": "float32", "op": "sum"}
        self.mark("sweep")

    def contribution(self, rank: int) -> float:
        """What `rank` puts into a value check: rank + 1 (+ 1 when it injects the allreduce fault)."""
        return rank + 1.0 + (1.0 if rank == self.rank and "allreduce" in self.faults else 0.0)

    def solo_rounds(self, nbytes: int) -> None:
        """After wrong sums: one all-reduce of nbytes per rank k in which only k contributes (k + 1,
        the others zeros). A round that comes out wrong names k's contribution; every round
        wrong points at the reduction itself, none wrong at an effect of several ranks together."""
        import torch
        import torch.distributed as dist

        x = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device=self.device)
        wrong: dict[str, str] = {}
        for k in range(self.world):
            x.fill_(self.contribution(k) if k == self.rank else 0.0)
            dist.all_reduce(x)
            p = mismatch(x, float(k + 1), exact=False)
            if p:
                wrong[str(k)] = p
        del x
        self.out["solo_rounds"] = {"bytes": nbytes, "wrong": wrong}
        self.mark("solo_rounds")

    def mark(self, phase: str) -> None:
        """Record the seconds since the last mark as `phase`."""
        now = time.perf_counter() - T0
        self.out["phase_s"][phase] = now - sum(self.out["phase_s"].values())

    def ddp(self, cfg: RunConfig, data: Dataset) -> None:
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        model, info = self.build(cfg)
        ddp = DistributedDataParallel(model, device_ids=[self.rank] if self.cuda else None)
        res = self.train(ddp, model, data, cfg, barrier=dist.barrier)
        wall = self.tensor([res["wall_s"]])
        dist.all_reduce(wall, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        res["wall_max_s"] = float(wall.item())
        timed = res["steps_timed"]
        res["images_per_s_all"] = self.world * cfg.batch * timed / res["wall_max_s"]
        res["model"] = info
        params = [p.detach() for p in model.parameters()]
        if "params" in self.faults:
            with torch.no_grad():
                params[0].add_(1e-3)
        flat = torch.cat([p.reshape(-1).float() for p in params])
        ref = flat.clone()
        dist.broadcast(ref, 0)
        diffs = [float(d.abs().max()) for d in torch.split(flat - ref, [p.numel() for p in params])]
        res["param_tensors"] = len(params)
        res["max_param_abs_diff"] = max(diffs)
        res["param_tensors_differing"] = sum(1 for d in diffs if d != 0)
        res["param_checksum_f64"] = float(flat.double().sum())
        self.out["ddp"] = res
        self.mark("ddp")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="multigpu_worker")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--backend", choices=("nccl", "gloo"), required=True)
    p.add_argument("--mode", choices=("gpu", "cpu-test"), default="gpu")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--timeout", type=float, default=120.0)  # the process group's (collectives)
    p.add_argument("--rendezvous-timeout", type=float, default=0.0)  # 0: --timeout
    p.add_argument("--seed", type=int, default=1234)
    a = p.parse_args(argv)
    exit_with_parent()  # never leave a rank holding a GPU
    out_file = Path(a.out_dir) / f"rank{a.rank}.json"
    w: Worker | None = None
    code, info = 0, {}
    try:
        w = Worker(a)
        w.run()
    except BaseException as e:  # recorded for the parent, then a non-zero exit
        code = 1
        info = {"error": f"{type(e).__name__}: {e}"[:1500], "traceback": traceback.format_exc()[-3000:]}
        _log(a.rank, info["error"])
        if w is not None:
            w.out.update(info)
    out = w.out if w is not None else {"rank": a.rank, **info}
    from ..record import clean_json

    part = out_file.with_suffix(".part")
    part.write_text(json.dumps(clean_json(out), allow_nan=False))
    part.replace(out_file)  # the parent reads a rank{R}.json as "this rank finished its work"
    return code


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: the interpreter's finalization races torch's C++ threads (gloo's workers,
    # NCCL's watchdog) even after destroy_process_group. A rank that had written its result died
    # by SIGABRT, "terminate called without an active exception", in 1 of 30 CPU-test runs here
    # (pytorch/pytorch#190489 is that crash). The result file is written; nothing is left to do.
    os._exit(status)
