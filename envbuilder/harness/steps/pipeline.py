"""The input_pipeline step: the same model fed by a real DataLoader (decode + augmentation on the
CPU) vs from GPU-resident data, and the bottleneck named from the three throughputs."""

from __future__ import annotations

import math
import statistics
import time
from typing import TYPE_CHECKING, Any

from ..record import Step, StepSkipped, log
from ..session import Session
from ..workloads.config import RunConfig

if TYPE_CHECKING:
    from typing import TypeAlias  # novermin (type checkers only)

    from ..workloads.pytorch.data import Dataset


PIPELINE_IMAGES = (320, 512)  # the GPU path's source images: size, count
Images: TypeAlias = "tuple[list[bytes], list[int], str]"  # encoded images, labels, codec


def prepare_images(s: Session, src_size: int, n: int) -> Images:
    """The step's source images (the plan may prepare them earlier): rendered on the session's
    device, JPEG-encoded on the CPU. On an H100 both took 0.47-0.49 s, where the CPU alone took
    5.5-7.2 s on an H200 (benchmarks/results/issue27-h100-2026-12-07/). The images differ from the
    CPU path's in their noise only."""
    from ..workloads.pytorch.data import render
    from ..workloads.pytorch.loader import encode_split

    return encode_split(render(n, src_size, s.opts.seed + 5, s.device))


def input_pipeline_step(
    s: Session,
    data: Dataset | None,
    cfg: RunConfig,
    *,
    batches: int,
    src_size: int = PIPELINE_IMAGES[0],
    n_images: int = PIPELINE_IMAGES[1],
    prepared: Images | None = None,
) -> None:
    """`prepared`: prepare_images(s, src_size, n_images) done before the step."""
    with s.rec.step("input_pipeline") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(12 if s.cuda else 8)
        with s.window(st):
            images = prepared or prepare_images(s, src_size, n_images)
            st.metrics["images_prepared_before"] = prepared is not None
            _measure(s, st, data, cfg, images, src_size=src_size, batches=batches)


def _measure(
    s: Session, st: Step, data: Dataset, cfg: RunConfig, images: Images, *, src_size: int, batches: int
) -> None:
    from ..workloads.pytorch.feed import FeedBench
    from ..workloads.pytorch.loader import DecodeAugment, default_workers, make_timed_loader, without_seconds

    workers = s.opts.workers or default_workers()
    blobs, labels, codec = images
    raw_hw = None if codec == "jpeg" else (src_size, src_size)
    ds = DecodeAugment(blobs, labels, data.size, train=True, raw_hw=raw_hw)
    st.metrics.update(
        codec=codec,
        source_image=f"{src_size}x{src_size}",
        mean_encoded_kib=round(sum(map(len, blobs)) / len(blobs) / 1024, 1),
        workers=workers,
        pin_memory=s.cuda,
        prefetch_factor=4,
        batch=cfg.batch,
        model=cfg.arch,
        precision=cfg.amp or "fp32",
        augmentation="RandomResizedCrop(0.08-1, 3/4-4/3) + horizontal flip",
    )
    if codec != "jpeg":
        st.warnings.append("PIL is not installed: raw bytes were loaded, JPEG decode not measured")
    bench = FeedBench(cfg)
    resident = bench.resident(data, batches)  # before any worker competes for the CPU
    loader = make_timed_loader(ds, cfg.batch, workers, pin=s.cuda)
    worker_s: list[float] = []  # the seconds a worker took for each batch the step took
    it = without_seconds(iter(loader), worker_s)
    t0 = time.perf_counter()
    next(it)  # worker start-up, excluded
    st.metrics["first_batch_s"] = time.perf_counter() - t0
    fed = bench.fed(it, batches)
    del it, loader, bench
    s.free()
    loader_only = loader_rate(worker_s, cfg.batch, workers)
    st.metrics.update(loader_rate_from=WORKER_SECONDS, worker_batch_s=sorted(round(v, 4) for v in worker_s))
    st.metrics.update(throughputs(loader_only, fed, resident, workers, s.device))
    log(f"input pipeline: loader {loader_only:.0f}, fed {fed:.0f}, resident {resident:.0f}")


WORKER_SECONDS = "workers x batch / the median seconds a worker took for one batch"  # loader_rate


def loader_rate(seconds: list[float], batch: int, workers: int) -> float:
    """Images/s the loader's workers sustain together: each makes a batch in the median of the
    seconds they took (measured while all of them worked and training ran beside them).

    Not the rate at which a consumer with nothing else to do empties the loader's queue: the
    workers fill it (torch: workers x its prefetch factor batches) while the consumer waits for
    the first batch, and a few batches timed from there came out of that queue: the torch
    certifications of 2026-12-06/07 (H200, H100) read 2,903 to 379,966 img/s that way from one
    host's 16 workers, and named the host-to-device copy the bottleneck where the workers were
    (benchmarks/loader_rate_bench.py measures both readings against the rate a drained loader
    sustains)."""
    if not seconds:
        raise ValueError("no batch was timed")
    return max(1, workers) * batch / statistics.median(seconds)


def throughputs(loader_only: float, fed: float, resident: float, workers: int, device: str) -> dict[str, Any]:
    """The input_pipeline step's three throughputs (img/s) and the bottleneck named from them,
    as every framework's step records them."""
    verdict, facts = name_bottleneck(loader_only, fed, resident, workers, device)
    return {
        "loader_only_img_s": loader_only,
        "loader_fed_img_s": fed,
        "resident_img_s": resident,
        "bottleneck": verdict,
        **facts,
    }


def name_bottleneck(
    loader_only: float, fed: float, resident: float, workers: int, device: str = "cuda"
) -> tuple[str, dict[str, Any]]:
    """Which side limits training: the loader's own rate against the model's on resident data
    first (a loader-fed window can be served from batches the workers prepared before it: it then
    shows the model's rate, not the loader's), then loader-fed against resident throughput."""
    ratio = fed / resident if resident > 0 else 0.0
    per_worker = loader_only / max(1, workers)
    need = math.ceil(resident / per_worker) if per_worker > 0 else None
    facts = {"fed_over_resident": round(ratio, 3), "workers_needed_estimate": need}
    if loader_only < 0.9 * resident:
        return (
            f"CPU input pipeline (decode + augmentation): {workers} workers give "
            f"{loader_only:.0f} img/s, the model alone takes {resident:.0f} img/s; about {need} "
            "workers (or GPU decoding, e.g. DALI/nvJPEG) would be needed",
            facts,
        )
    if ratio >= 0.9:
        return "none: the input pipeline keeps up with the model", facts
    if device == "cpu":
        return (
            "CPU contention: the loader alone is fast enough, but its workers and the model "
            "share the same cores",
            facts,
        )
    return (
        "host-to-device transfer or synchronisation: the loader alone is fast enough, "
        "the loader-fed training is not",
        facts,
    )
