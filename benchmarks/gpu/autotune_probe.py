"""One cuDNN-autotuned ResNet-50 training step in a fresh process, as the harness's warm_autotuner
takes it (bf16 autocast, channels-last, batch 256, cudnn.benchmark), then a second step; prints one
Markdown table row (PROBE_HEADER's columns) for benchmarks/gpu/first_run.sh and jit_volume_proof.sh:

    python3 benchmarks/gpu/autotune_probe.py LABEL

The first step's time holds cuDNN's algorithm search, and the driver compiling the PTX kernels it
loads unless they are in its JIT cache (CUDA_CACHE_PATH, default ~/.nv/ComputeCache).
"""

import os
import sys
import time

PROBE_HEADER = (
    "| probe | import s | model+data s | first step (autotune) s | second step s | total s "
    "| CUDA_CACHE_PATH |\n|---|---|---|---|---|---|---|"
)


def main(label: str) -> None:
    t0 = time.monotonic()
    import torch
    import torchvision

    t_import = time.monotonic() - t0
    torch.backends.cudnn.benchmark = True
    m = torchvision.models.resnet50(num_classes=5).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 5, (256,), device="cuda")
    torch.cuda.synchronize()
    t_setup = time.monotonic() - t0 - t_import

    def step() -> float:
        t = time.monotonic()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return time.monotonic() - t

    first, second = step(), step()
    cache = os.environ.get("CUDA_CACHE_PATH") or "default"
    total = time.monotonic() - t0
    cells = [label, f"{t_import:.2f}", f"{t_setup:.2f}", f"{first:.2f}", f"{second:.3f}", f"{total:.2f}"]
    cells.append(cache)
    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--header":
        print(PROBE_HEADER)
    else:
        main(" ".join(sys.argv[1:]) or "probe")
