"""One Markdown table row of a certification's figures, for jit_volume_proof.sh: FILE is a
certificate (`certify --out`) or a harness result (`python -m envbuilder_harness --out`).

    python3 benchmarks/gpu/cert_row.py --header     the header (after the scripts' own first columns)
    python3 benchmarks/gpu/cert_row.py FILE         "| harness wall | verdict | ... |"
"""

import json
import sys
from pathlib import Path
from typing import Any

HEADER = (
    "harness wall s | verdict | cudnn_warmup s | JIT cache found (files, bytes) | RN50 child compile s "
    "| Inductor cache found (files, bytes) | GPU busy % |"
)


def row(path: str) -> str:
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        return f"| no result ({type(e).__name__}) | | | | | | |"
    h = d.get("harness", d)  # a certificate holds the harness result
    warm = (h.get("facts") or {}).get("cudnn_warmup") or {}
    host = h.get("host") or {}
    jit = host.get("cuda_jit_cache") or {}
    ind = (host.get("compile_caches") or {}).get("TORCHINDUCTOR_CACHE_DIR") or {}
    pre: dict[str, Any] = {}
    for s in h.get("steps") or []:
        if s.get("name") == "tuned_rn50_compiled":
            pre = ((s.get("metrics") or {}).get("config") or {}).get("precompile") or {}
    compile_s = pre.get("compile_s")
    busy = (((h.get("telemetry") or {}).get("summary") or {}).get("util_gpu") or {}).get("mean")
    cells = [
        f"{h.get('wall_seconds', 0):.1f}",
        str(h.get("verdict")),
        str(warm.get("seconds", "-")),
        f"{jit.get('path')}: {jit.get('files')}, {jit.get('bytes')}",
        f"{compile_s:.1f}" if isinstance(compile_s, (int, float)) else "-",
        f"{ind.get('path', 'not given')}: {ind.get('files', '-')}, {ind.get('bytes', '-')}",
        str(busy if busy is not None else "-"),
    ]
    return "| " + " | ".join(cells) + " |"


if __name__ == "__main__":
    print(HEADER if sys.argv[1:] == ["--header"] else row(sys.argv[1]))
