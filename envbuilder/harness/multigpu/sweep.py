"""The all-reduce sweep's arithmetic, as nccl-tests defines it (doc/PERFORMANCE.md): message sizes,
bandwidths, the value every rank must see after the sum, and the largest size a GPU's memory allows."""

from __future__ import annotations

from typing import Any

MIN_BYTES = 8
# 8 GiB, nccl-tests' `-b 8 -e 8G -f 2`: the published 8-GPU H200 ring figure (365.6 GB/s,
# perf-anchors 6c) is at 8 GiB, and on 2 H200s busbw was still rising at 1 GiB. Which size a floor
# judges is thresholds.yaml's `busbw_at_bytes`, not this.
GPU_MAX_BYTES = 8 << 30
CPU_MAX_BYTES = 4 << 20  # --multi-gpu-cpu-test: 4 MiB keeps the gloo sweep to a second
# The value checks work through the buffer in chunks of this many bytes, so their temporaries
# (difference, magnitude, masks: about 2.5 chunks; the int32 pattern as int64 and its product: 3)
# stay under CHECK_SCRATCH_BYTES whatever the message size.
CHECK_CHUNK_BYTES = 64 << 20
CHECK_SCRATCH_BYTES = 512 << 20
# Left free beside the buffer and the scratch: NCCL's own buffers and channels, the CUDA context
# growing, the caching allocator's rounding, whatever else holds memory on the GPU.
MARGIN_MIN_BYTES = 1 << 30
MARGIN_FRACTION = 0.125


def sweep_sizes(max_bytes: int, min_bytes: int = MIN_BYTES) -> list[int]:
    """Message sizes in bytes: min_bytes, x2, ... up to max_bytes inclusive."""
    sizes, b = [], min_bytes
    while b <= max_bytes:
        sizes.append(b)
        b *= 2
    return sizes


def pow2_floor(x: int) -> int:
    """The largest power of two <= x (1 for x < 1)."""
    return 1 << (max(1, int(x)).bit_length() - 1)


def size_cap(requested: int, free_bytes: int | None) -> dict[str, Any]:
    """The sweep's largest message: `requested`, unless the GPU with the least free memory (every
    rank must sweep the same sizes) cannot hold it beside the check's scratch and a margin of
    max(1 GiB, 1/8 of the free memory); then the largest power of two that fits. free_bytes None:
    no GPU (the CPU test mode). Every field lands in the result (`multi_gpu.sweep_cap`)."""
    cap: dict[str, Any] = {"requested_bytes": requested, "free_bytes_min": free_bytes}
    if free_bytes is None:
        return {**cap, "max_bytes": requested, "limited_by": "request"}
    margin = max(MARGIN_MIN_BYTES, int(free_bytes * MARGIN_FRACTION))
    room = free_bytes - margin - CHECK_SCRATCH_BYTES
    memory_cap = pow2_floor(room) if room >= MIN_BYTES else 0
    top = max(MIN_BYTES, min(requested, memory_cap))
    return {
        **cap,
        "margin_bytes": margin,
        "scratch_bytes": CHECK_SCRATCH_BYTES,
        "memory_cap_bytes": memory_cap,
        "max_bytes": top,
        "limited_by": "request" if top == requested else "memory",
    }


def bandwidths(nbytes: int, seconds: float, world: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 B/s) of one all-reduce of nbytes taking seconds, as nccl-tests
    doc/PERFORMANCE.md defines them: algbw = S / t; busbw = algbw * 2(n-1)/n."""
    if seconds <= 0 or world < 1:
        return 0.0, 0.0
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * bus_factor(world)


def bus_factor(world: int) -> float:
    """busbw / algbw of an all-reduce over `world` ranks: 2(n-1)/n (1 at 2, 1.5 at 4, 1.75 at 8)."""
    return 2 * (world - 1) / world


def human_bytes(n: Any) -> str:
    """1073741824 -> '1 GiB', 8 -> '8 B' ('?' for a non-integer)."""
    if not isinstance(n, int):
        return "?"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def expected_sum(world: int) -> int:
    """Each rank r contributes r+1: the reduced value is 1 + 2 + ... + n."""
    return world * (world + 1) // 2
