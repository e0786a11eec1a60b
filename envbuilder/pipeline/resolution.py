"""Spec -> resolution: the host the stack is for (given or probed), the spec's request resolved
for it, and, when the spec names no Python, the newest Python whose wheels the framework and the
requirements have (image/python_pick.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from envbuilder.errors import UsageError
from envbuilder.host.model import Host
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import Platform, machine_of
from envbuilder.resolve.gpus import enrich_host, gpu_from_cc, gpu_from_match, lookup_gpu
from envbuilder.resolve.model import NoCompatibleStackError, Request, Resolution
from envbuilder.resolve.wsl import host_under_wsl
from envbuilder.versions import parse_host_driver, quote_input

if TYPE_CHECKING:  # image.* reads YAML: not loaded by commands that need no spec
    from envbuilder.image.packages import LockSettings
    from envbuilder.image.spec import ImageSpec


def target_host(
    matrix: Matrix, driver: str | None, gpus: tuple[str, ...], ccs: tuple[str, ...], *, wsl: bool = False
) -> Host:
    """The host a stack is for: the one given (a driver, GPU names, compute capabilities), or this
    machine's when nothing is given. Under WSL2 (`wsl`, or detected on this machine) the driver is
    the Windows driver nvidia-smi prints, checked as the Linux driver of the same CUDA
    (resolve/wsl.py).

    Raises UsageError for a malformed driver, an unknown GPU name or compute capability, and for
    a probe that read a driver version that is none ('' or '[N/A]' from nvidia-smi): the host is
    then described with --driver and --gpu/--cc.
    """
    if driver is None and not gpus and not ccs:
        from envbuilder.host import probe_host  # lazy: probing touches NVML / nvidia-smi

        report = probe_host()
        if report.driver is not None:
            _check_probed_driver(report.driver, report.source)
        host = enrich_host(matrix, report.to_host())
        return host_under_wsl(matrix, host) if (wsl or report.wsl) else host
    if driver is not None:
        driver = parse_host_driver(driver)
    given = [gpu_from_match(matrix, lookup_gpu(matrix, name)) for name in gpus]
    given += [gpu_from_cc(matrix, cc) for cc in ccs]
    host = Host(driver=driver, gpus=tuple(given), source="given")
    return host_under_wsl(matrix, host) if wsl else host


def _check_probed_driver(driver: str, source: str) -> None:
    """The driver a probe read is checked as a given one is (versions.parse_host_driver). Raises
    UsageError naming where it came from: the user typed nothing."""
    try:
        parse_host_driver(driver)
    except UsageError:
        raise UsageError(
            f"this host's driver version {quote_input(driver)}, as {source} reported it, is not a "
            "driver version",
            hint="describe the host instead: --driver VERSION (e.g. 580.95.05) with --gpu NAME or --cc X.Y",
        ) from None


def resolve_spec(
    spec: ImageSpec,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    cpu_only: bool,
    *,
    request: Request | None = None,
    settings: LockSettings | None = None,
    platform: Platform | None = None,
) -> tuple[Matrix, Resolution]:
    """Resolve an image spec's request (or `request`, one derived from it) for the host given (or
    this one): what `render`, `build` and `up` start from. Without a Python in the request, the
    newest Python with wheels for the framework and the spec's requirements (image/python_pick.py,
    uv asked from `settings`' indexes), the reason in `resolution.python_reason` for the caller
    to say.
    Raises UsageError, MatrixError, NoCompatibleStackError (with the resolution)."""
    from envbuilder.matrix import load_matrix
    from envbuilder.resolve.resolver import resolve

    matrix = load_matrix()
    host = target_host(matrix, driver, gpus, ccs)
    asked = request or spec.to_request(cpu_only=cpu_only)
    if platform is not None:
        asked = replace(asked, platform=platform)
    resolution = resolve(matrix, asked, host)
    if resolution.stack is None:
        hint = f"run `envbuilder resolve --framework '{spec.framework}{spec.specifier}' --explain`"
        raise NoCompatibleStackError(resolution, hint, file=spec.path)
    if asked.python is None:
        resolution = _default_python(matrix, asked, host, resolution, spec, settings)
    return matrix, resolution


def _default_python(
    matrix: Matrix,
    asked: Request,
    host: Host,
    resolution: Resolution,
    spec: ImageSpec,
    settings: LockSettings | None,
) -> Resolution:
    """The resolution for the newest Python whose wheels the framework and the requirements have."""
    from envbuilder.image.python_pick import candidate_pythons, pick_python, uv_checker
    from envbuilder.resolve.resolver import python_candidates, resolve

    stack = resolution.stack
    assert stack is not None
    # the requirements' wheels are asked for the machine the stack is for
    check = uv_checker(spec, settings, machine_of(stack.platform))
    by_python = {stack.python: resolution}
    if check is not None:  # only Pythons the resolver gives a stack for are asked of uv
        for py in candidate_pythons(stack, python_candidates(matrix, asked, stack.strategy)):
            if py not in by_python:
                again = resolve(matrix, replace(asked, python=py), host)
                if again.stack is not None and again.stack.version == stack.version:
                    by_python[py] = again
    pick = pick_python(stack, candidate_pythons(stack, list(by_python)), spec, check)
    return replace(by_python.get(pick.python, resolution), python_reason=pick.reason)
