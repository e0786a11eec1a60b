#!/usr/bin/env bash
# What a certification's processes pay to import torch, torchvision's models and torch.compile's
# modules on the GPU machine's own Python (the native runs of issue27_proof.sh use it), and why:
# whether the installed packages carry compiled bytecode (.pyc for this interpreter) or every
# process compiles them again (the harness runs with PYTHONDONTWRITEBYTECODE=1, as in images), and
# the CPU topology the compile children share. One device call, well under a minute:
#   bash benchmarks/gpu/import_costs.sh        -> $OUT/import-costs.md
set -uo pipefail
PYTHON="${PYTHON:-python3}"
OUT=${OUT:-out}; mkdir -p "$OUT"
R="$OUT/import-costs.md"
{
  echo "# Import costs on $(hostname), $(date -u +%FT%TZ)"
  echo; echo '```'; lscpu | grep -E '^(CPU\(s\)|Thread|Core|Socket|Model name|NUMA node\(s\))'; echo '```'
  echo; echo "## Bytecode of the installed packages"
  "$PYTHON" - <<'PY'
import importlib.util, os, sys, sysconfig
tag = sys.implementation.cache_tag
print(f"python {sys.version.split()[0]} at {sys.executable}; cache tag {tag}")
for name in ("torch", "torch._dynamo", "torch._inductor", "torchvision", "sympy", "triton"):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        print(f"- {name}: not found"); continue
    root = list(spec.submodule_search_locations)[0]
    py = pyc = 0
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                py += 1
                base = f[:-3]
                pyc += os.path.exists(os.path.join(d, "__pycache__", f"{base}.{tag}.pyc"))
    print(f"- {name}: {py} .py files, {pyc} with a .pyc for {tag}; writable: {os.access(root, os.W_OK)}")
PY
  for run in 1 2; do
    echo; echo "## -X importtime, run $run (PYTHONDONTWRITEBYTECODE=1): the 15 slowest, cumulative us"
    echo '```'
    t0=$(date +%s.%N)
    PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -X importtime -c \
      'import torch, torchvision.models, torch._dynamo; from torch._inductor import compile_fx' 2>"$OUT/importtime-$run.txt"
    rc=$?
    echo "wall $(echo "$(date +%s.%N) - $t0" | bc) s (exit $rc)"
    [ "$rc" = 0 ] || grep -v '^import time:' "$OUT/importtime-$run.txt" | tail -3
    grep '^import time:' "$OUT/importtime-$run.txt" | sort -t'|' -k2 -n -r | head -15
    echo '```'
  done
} >"$R" 2>&1
rm -f "$OUT"/importtime-*.txt
cat "$R"
