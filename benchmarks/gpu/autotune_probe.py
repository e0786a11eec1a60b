"""One cuDNN-autotuned ResNet-50 training step in a fresh process, as the harness's warm_autotuner
takes it (bf16 autocast, channels-last, batch 256, cudnn.benchmark), then a second step; prints one
Markdown table row (PROBE_HEADER's columns) for benchmarks/gpu/first_run.sh and jit_volume_proof.sh:

    python3 benchmarks/gpu/autotune_probe.py [--compile] LABEL

The first step's time holds cuDNN's algorithm search, and the driver compiling the PTX kernels it
loads unless they are in its JIT cache (CUDA_CACHE_PATH, default ~/.nv/ComputeCache). With
--compile the model is torch.compile'd (the default Inductor backend, as the harness's tuned
compiled run): the first step is then the compile too, or the load of what an earlier process left
in the Inductor cache (TORCHINDUCTOR_CACHE_DIR, default /tmp/torchinductor_USER). The last column
names the caches and the files each held before the probe.
"""

import os
import sys
import time

PROBE_HEADER = (
    "| probe | import s | model+data s | first step (autotune; compile) s | second step s | total s "
    "| caches (files before) |\n|---|---|---|---|---|---|---|"
)


def caches() -> str:
    """Each cache the probe may fill, with the files it held: CUDA's, and Inductor's when set."""
    out = []
    for var in ("CUDA_CACHE_PATH", "TORCHINDUCTOR_CACHE_DIR"):
        path = os.environ.get(var)
        if path or var == "CUDA_CACHE_PATH":
            files = sum(len(names) for _, _, names in os.walk(path)) if path else "-"
            out.append(f"{var}={path or 'default'} ({files})")
    return "; ".join(out)


def main(label: str, compiled: bool) -> None:
    found = caches()
    t0 = time.monotonic()
    import torch
    import torchvision

    t_import = time.monotonic() - t0
    torch.backends.cudnn.benchmark = True
    m = torchvision.models.resnet50(num_classes=5).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    run = torch.compile(m) if compiled else m
    x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 5, (256,), device="cuda")
    torch.cuda.synchronize()
    t_setup = time.monotonic() - t0 - t_import

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
    cells = [label, f"{t_import:.2f}", f"{t_setup:.2f}", f"{first:.2f}", f"{second:.3f}", f"{total:.2f}"]
    cells.append(found)
    print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--header"]:
        print(PROBE_HEADER)
    else:
        compiled = "--compile" in args
        main(" ".join(a for a in args if a != "--compile") or "probe", compiled)
