"""The CUDA driver's JIT cache and the frameworks' compile caches, kept per image on the host.

The driver compiles PTX it has no machine code for when a kernel is first loaded, and keeps the
result in its JIT cache (`CUDA_CACHE_PATH`, default ~/.nv/ComputeCache; NVIDIA, CUDA Programming
Guide, "CUDA Environment Variables":
https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html).
cuDNN's autotuning loads such kernels: on an H100 one autotuned ResNet-50 bf16 step took 12.1-14.6 s
with the cache empty and 3.2-3.9 s with it filled, the harness's cudnn_warmup 15.3 against 3.7 s
(benchmarks/results/issue27-h100-2026-12-07-f/). A container starts with an empty cache, so every
certification and every training job paid that again, however often the host had run the image.

Where a GPU container of `certify` or `run` gets it: an engine volume named after the image's full
ID, mounted at the folder the image keeps for it (image/metadata.py JIT_CACHE_DIR, owned by the
image's user: the volume starts as that folder, so that user can write it), and CUDA_CACHE_PATH
pointing there. The frameworks' own compile caches live in folders of the same volume
(frameworks/NAME.py COMPILE_CACHES: torch.compile's Inductor and Triton caches, JAX's persistent
compilation cache), each variable pointing at its folder: a certification or job that compiles
what an earlier container of the image compiled on this host loads it instead (the compile of the
certification's ResNet-50 took 38-42 s on the H200 machine, benchmarks/results/issue27-h200-2026-12-06-g/,
and 52-55 s on an H100, issue27-h100-2026-12-07-h/). Never shared between images (a cache another
image could write would be a way into its kernels; JAX's docs call its cache trusted code), nor
between certify and run: run's jobs execute code that is not the image's (the user's command,
mounted folders), and what they compiled must not become kernels a certification measures;
certify's volume holds what the harness and the image's own smoke command compiled.
The runtime decides what a volume is (runtime/base.py `volumes`): the engine's named volume
(docker, podman), a folder of the calling user's (Apptainer, enroot: runtime/files.py
volume_binds). Not where the runtime has none, the image does not declare the folder (an image
envbuilder did not build), the job runs as another user than the image's (`run --user`: the
folder is not theirs), or there is no GPU access. A variable the caller sets is theirs: CUDA's
cache is left alone when the caller sets CUDA_CACHE_PATH or CUDA_CACHE_DISABLE, a framework's when
the caller sets its variable; no volume when the caller has set all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from envbuilder.engine import ImageInfo, Volume
from envbuilder.frameworks import ALL_FRAMEWORK_MODULES
from envbuilder.image.metadata import read_metadata
from envbuilder.runtime import AccessChoice, Runtime

VOLUME_PREFIX = "envbuilder-cuda-jit-"  # `docker volume ls --filter name=envbuilder-cuda-jit-`
CACHE_ENV = "CUDA_CACHE_PATH"
USERS = ("certify", "run")  # whose volume: each has its own per image
_CALLERS_OWN = (CACHE_ENV, "CUDA_CACHE_DISABLE")


@dataclass(frozen=True, slots=True)
class JitCache:
    """The image's JIT cache volume for one container, and the variables that point the caches
    there (the container's environment gets them; the caller's own variables win)."""

    volume: Volume
    env: dict[str, str]


def cache_env(folder: str, env: Mapping[str, str]) -> dict[str, str]:
    """The variables that put each cache into the volume mounted at `folder`: CUDA's at its top,
    each framework's in its own folder below; none the caller sets (`env`) itself."""
    out = {} if any(k in env for k in _CALLERS_OWN) else {CACHE_ENV: folder}
    for fw in ALL_FRAMEWORK_MODULES:
        out.update({c.env: f"{folder}/{c.folder}" for c in fw.COMPILE_CACHES if c.env not in env})
    return out


def volume_name(image_id: str, user: str) -> str:
    """The JIT cache volume of one image for `user` (one of USERS): envbuilder-cuda-jit-USER-HEX,
    HEX the image ID's full digest."""
    if user not in USERS:
        raise ValueError(f"JIT cache volumes are {USERS}'s, not {user!r}'s")
    return f"{VOLUME_PREFIX}{user}-{image_id.removeprefix('sha256:')}"


def jit_cache_volume(
    image: ImageInfo,
    runtime: Runtime,
    choice: AccessChoice,
    env: Mapping[str, str],
    *,
    owner: str,
    user: str | None = None,
) -> JitCache | None:
    """The JIT cache volume a GPU container of `image` gets from `owner` (certify or run), with the
    variables that point the caches there, or None (the module's docstring says when). `env`: the
    variables the caller sets; `user`: the user the job runs as, when not the image's own."""
    if choice.mode is None or not runtime.volumes or user is not None:
        return None
    folder = read_metadata(image).jit_cache
    if folder is None:
        return None
    variables = cache_env(folder, env)
    if not variables:
        return None
    return JitCache(volume=Volume(name=volume_name(image.id, owner), target=folder), env=variables)
