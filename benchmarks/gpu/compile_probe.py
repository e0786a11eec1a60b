"""One torch.compile'd ResNet-50 training step in a fresh process, as the harness's tuned compiled
run takes it (bf16 autocast, channels-last, batch 256, the default Inductor backend), then a second
step; prints one Markdown table row (PROBE_HEADER's columns) for benchmarks/gpu/jit_volume_proof.sh:

    python3 benchmarks/gpu/compile_probe.py LABEL

The first step's time is the compile: Dynamo, AOT autograd, Inductor and Triton, or loading what an
earlier process left in the Inductor cache (TORCHINDUCTOR_CACHE_DIR, default /tmp/torchinductor_USER).
"""

import os
import sys
import time

PROBE_HEADER = (
    "| probe | import s | first step (compile) s | second step s | total s "
    "| TORCHINDUCTOR_CACHE_DIR (files before) |\n|---|---|---|---|---|---|"
)


def files_in(path: str) -> int:
    return sum(len(names) for _, _, names in os.walk(path)) if path else 0


def main(label: str) -> None:
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    before = files_in(cache)
    t0 = time.monotonic()
    import torch
    import torchvision

    t_import = time.monotonic() - t0
    torch.backends.cudnn.benchmark = True
    m = torchvision.models.resnet50(num_classes=5).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    run = torch.compile(m)
    x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 5, (256,), device="cuda")

    def step() -> float:
        t = time.monotonic()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return time.monotonic() - t

    first, second = step(), step()
    total = time.monotonic() - t0
    cells = [label, f"{t_import:.2f}", f"{first:.2f}", f"{second:.3f}", f"{total:.2f}"]
    cells.append(f"{cache or 'default'} ({before})")
    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--header":
        print(PROBE_HEADER)
    else:
        main(" ".join(sys.argv[1:]) or "probe")
