#!/usr/bin/env bash
# Why the first certifications after a GPU machine starts are slower than later ones, even when the
# page cache is dropped before each (issue27-h100-2026-12-07-d: 77.2 / 75.7 s for the first two,
# 63.3 / 61.9 s for the next two; the first cuDNN autotuning 10.6 s against 3.0-4.5 s). Candidates:
# the disk (the libraries' first read), and the machine's memory (the lent machines are microVMs
# whose RAM "starts small and grows as it is used": a page the guest touches for the first time
# costs more than one it touched before and freed). Run it as the FIRST thing on a fresh machine:
#   bash benchmarks/gpu/first_run.sh             -> $OUT/first-run.md (about 90 s)
# Order: cuDNN probe A (all cold), page cache dropped, probe B (guest page cache cold, the disk's
# blocks read once before), memory first touch of MEM_GB twice (first touch against re-touch), page
# cache dropped, probe C, D (warm), then the CUDA JIT cache: F (an empty CUDA_CACHE_PATH), G (the
# folder F filled), H (CUDA_CACHE_DISABLE=1). A probe is benchmarks/gpu/autotune_probe.py in a fresh
# process (one cuDNN-autotuned ResNet-50 bf16 step at batch 256, as warm_autotuner, then a second).
set -uo pipefail
PYTHON="${PYTHON:-python3}"
OUT=${OUT:-out}; mkdir -p "$OUT"
R="$OUT/first-run.md"
MEM_GB=${MEM_GB:-24}
export PYTHONDONTWRITEBYTECODE=1
meminfo() { awk '/^(MemTotal|MemFree|Cached):/ {printf "%s %d MiB; ", $1, $2/1024}' /proc/meminfo; echo; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null && echo "page cache dropped" || echo "page cache NOT dropped (not root?)"; }
# a fresh process: one cuDNN-autotuned ResNet-50 step and a second (benchmarks/gpu/autotune_probe.py)
probe() { "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/autotune_probe.py" "$1"; }
header() { "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/autotune_probe.py" --header; }
touch_mem() {
  "$PYTHON" - "$MEM_GB" <<'PY'
import mmap, sys, time
import numpy as np
gb = int(sys.argv[1]); out = []
for attempt in ("first touch", "touched again (freed and mapped anew)"):
    buf = mmap.mmap(-1, gb << 30)
    a = np.frombuffer(buf, dtype=np.uint8)
    t = time.monotonic(); a[::4096] = 1; dt = time.monotonic() - t
    out.append(f"- {attempt}: {gb} GiB in {dt:.2f} s ({gb / dt:.1f} GiB/s)")
    del a; buf.close()
print("\n".join(out))
PY
}
{
  echo "# First runs after a machine start, $(hostname), $(date -u +%FT%TZ)"
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "uptime: $(cut -d' ' -f1 /proc/uptime) s; $(nproc) CPUs"; echo "memory at start: $(meminfo)"
  echo; header
  probe "A: first process after the start"
  echo "<!-- $(drop) -->"
  probe "B: page cache dropped"
  echo; echo "Memory, $MEM_GB GiB, one write per 4 KiB page (memory before: $(meminfo)):"
  touch_mem
  echo "memory after: $(meminfo)"
  echo; echo "<!-- $(drop) -->"
  header
  probe "C: page cache dropped, after the memory touch"
  probe "D: warm (nothing dropped)"
  # The CUDA driver's JIT cache (default ~/.nv/ComputeCache; dropping the page cache keeps it):
  # an empty folder, the same again, and no cache at all.
  jit=$(mktemp -d)
  CUDA_CACHE_PATH=$jit probe "F: CUDA_CACHE_PATH an empty folder"
  CUDA_CACHE_PATH=$jit probe "G: the same folder again ($(du -sh "$jit" | cut -f1) after F)"
  CUDA_CACHE_DISABLE=1 probe "H: CUDA_CACHE_DISABLE=1"
  rm -rf "$jit"
} 2>&1 | tee "$R"
