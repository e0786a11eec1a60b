"""The all-reduce sweep's arithmetic, as nccl-tests defines it (doc/PERFORMANCE.md): message sizes,
bandwidths and the value every rank must see after the sum."""

from __future__ import annotations

MIN_BYTES = 8
GPU_MAX_BYTES = 1 << 30  # 1 GiB, as the issue asks (nccl-tests -b 8 -e 1G -f 2)
CPU_MAX_BYTES = 4 << 20  # --multi-gpu-cpu-test: 4 MiB keeps the gloo sweep to a second


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


def bandwidths(nbytes: int, seconds: float, world: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 B/s) of one all-reduce of nbytes taking seconds, as nccl-tests
    doc/PERFORMANCE.md defines them: algbw = S / t; busbw = algbw * 2(n-1)/n."""
    if seconds <= 0 or world < 1:
        return 0.0, 0.0
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * 2 * (world - 1) / world


def expected_sum(world: int) -> int:
    """Each rank r contributes r+1: the reduced value is 1 + 2 + ... + n."""
    return world * (world + 1) // 2
