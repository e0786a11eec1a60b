"""What a framework (envbuilder/frameworks/: torch, tensorflow, jax) importable in a Python was
built for, and whether that build fits a host: kernels (SASS or PTX) for each GPU's compute
capability, CUDA runtime vs driver.

The import happens in a child interpreter with a timeout; the fit rules are pure functions.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from packaging.version import Version

from envbuilder import frameworks as registry
from envbuilder import resources
from envbuilder.archs import kernel_for as archs_kernel_for
from envbuilder.archs import parse_target
from envbuilder.host import HostReport, Runner, run_command
from envbuilder.matrix.model import Matrix
from envbuilder.versions import parse_cc

Status = Literal["ok", "warn", "fail"]
FRAMEWORKS = registry.NAMES
FRAMEWORK_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkBuild:
    """What a framework importable in the current Python was built for."""

    name: str
    version: str | None = None
    cuda: str | None = None  # CUDA runtime X.Y (jax: the plugin's major only); None: CPU build
    archs: tuple[str, ...] = ()  # sm_XY (SASS) and compute_XY (PTX) entries
    arch_source: str | None = None
    error: str | None = None  # import or probe failure

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "cuda": self.cuda,
            "archs": list(self.archs),
            "arch_source": self.arch_source,
            "error": self.error,
        }


# Runs in a child interpreter: a framework that hangs or crashes on import cannot take doctor down.
# The framework's module (envbuilder/frameworks/) fills `out`; this wraps it.
_PROBE = """
import json, sys
out = {{}}
try:
{body}except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps(out))
"""


def probe_source(name: str) -> str:
    """The child's program for framework `name` (its module's PROBE). Raises UsageError for a
    name the registry does not hold."""
    body = registry.get(name).PROBE
    return _PROBE.format(body="".join(f"    {line}\n" for line in body.splitlines()))


def probe_framework(name: str, *, run: Runner = run_command, python: str = sys.executable) -> FrameworkBuild:
    """Import `name` in a child `python` (with a timeout) and read its build. Never raises: a
    failed import or probe comes back in `error`."""
    if name not in registry.REGISTRY:
        return FrameworkBuild(name=name, error=f"envbuilder knows no framework {name!r}")
    data = _child_json(run, [python, "-c", probe_source(name), name])
    if isinstance(data, str):
        return FrameworkBuild(name=name, error=f"probe {data}")
    cuda = data.get("cuda")
    return FrameworkBuild(
        name=name,
        version=data.get("version"),
        cuda=None if cuda is None else str(cuda),
        archs=tuple(str(a) for a in data.get("archs") or ()),
        arch_source=data.get("arch_source"),
        error=data.get("error"),
    )


def kernel_for(archs: tuple[str, ...], cc: str) -> tuple[Literal["sass", "ptx"], str] | None:
    """The kernel a build with `archs` (sm_XY, compute_XY, or TensorFlow's dotted SASS form) runs on a
    GPU of compute capability `cc`, as (kind, the arch entry); None: "no kernel image is available
    for execution". The rule is envbuilder.archs'."""
    parsed = {t: a for a in archs if (t := parse_target(a)) is not None}
    got = archs_kernel_for(parse_cc(cc), parsed)
    return (got.kind, parsed[got]) if got else None


def cuda_xy(version: str) -> Version:
    """'12.8.1' -> 12.8, '13' -> 13.0: the part of a CUDA version the driver contract is about."""
    parts = [*re.findall(r"\d+", version), "0"][:2]
    return Version(".".join(parts))


def cuda_fit(runtime: str, host: HostReport, matrix: Matrix | None) -> tuple[Status, str, str | None]:
    """Does a CUDA `runtime` run on this host's driver? ok when the driver supports it natively;
    warn through minor-version compatibility (same major, driver >= that major's floor from the
    matrix); fail otherwise. Returns (status, detail, fix). Never raises."""
    if not host.cuda_driver:
        return "warn", f"CUDA {runtime} runtime; the driver's CUDA version is unknown", None
    rt, drv = cuda_xy(runtime), cuda_xy(host.cuda_driver)
    said = f"CUDA {runtime} runtime, driver {host.driver} supports CUDA {host.cuda_driver}"
    if rt <= drv:
        return "ok", said, None
    fix = (
        f"install a build for CUDA <= {host.cuda_driver} (`envbuilder resolve`) "
        f"or a driver that supports CUDA {rt}"
    )
    if rt.major > drv.major:
        return "fail", f"{said}: CUDA driver version is insufficient for this runtime", fix
    majors = matrix.cuda.majors if matrix else ()
    floor = next((m.mvc_min_driver for m in majors if m.major == rt.major), None)
    if floor is None:
        why = "the matrix was not loaded" if matrix is None else "the matrix has no floor for it"
        return "warn", f"{said}: needs minor-version compatibility ({why})", fix
    if host.driver and Version(host.driver) >= Version(floor):
        return (
            "warn",
            f"{said}: runs through minor-version compatibility (driver >= {floor}) with a "
            f"limited feature set; PTX JIT needs a CUDA {rt} driver",
            fix,
        )
    return "fail", f"{said}: below the CUDA {rt.major}.x minor-version floor {floor}", fix


def kernel_fit(build: FrameworkBuild, host: HostReport) -> tuple[Status, str]:
    """Does `build` have kernels for every GPU of `host`? ok: SASS for all; warn: some only have PTX
    (JIT at first use) that this driver can compile; fail: a GPU has no usable kernel."""
    worst: Status = "ok"
    parts = []
    for g in host.gpus:
        got = kernel_for(build.archs, g.cc) if g.cc else None
        if got and got[0] == "sass":
            parts.append(f"gpu{g.index} (cc {g.cc}): SASS {got[1]}")
            continue
        if got is None:
            worst = "fail"
            parts.append(f"gpu{g.index} (cc {g.cc or '?'}): no kernel image for this GPU")
            continue
        # PTX is JIT-compiled by the driver, which must be at least as new as the PTX's toolkit.
        jit_ok = bool(host.cuda_driver) and cuda_xy(build.cuda or "0") <= cuda_xy(host.cuda_driver or "0")
        worst = "fail" if worst == "fail" or not jit_ok else "warn"
        too_old = "" if jit_ok else f"; the driver is too old to JIT CUDA {build.cuda} PTX"
        parts.append(f"gpu{g.index} (cc {g.cc}): PTX {got[1]} only, JIT at first use{too_old}")
    return worst, "; ".join(parts)


# The harness's inventory (stdlib only) run by the Python whose frameworks are checked: it finds
# their packages without importing them and reads each CUDA library's fatbins.
_INVENTORY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from harness import inventory
print(json.dumps(inventory.scan(inventory.package_dirs() + inventory.system_dirs())))
"""


_FIND = (
    "import importlib.util, json, sys; "
    "print(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n)]))"
)


def user_python(path: str | None = None, own_prefix: str = sys.prefix) -> str:
    """The Python whose frameworks are the user's: the first `python3` on PATH that is not in
    envbuilder's own environment (its venv holds torch for its tests, never the user's); envbuilder's
    own interpreter when there is no other."""
    own = Path(own_prefix).resolve()
    for folder in (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep):
        candidate = Path(folder or ".") / "python3"
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        if own in (candidate.parent.resolve(), candidate.parent.parent.resolve()):
            continue  # envbuilder's own venv (its bin/), however PATH names it
        return str(candidate)
    return sys.executable


def frameworks_in(python: str, *, run: Runner = run_command) -> frozenset[str]:
    """Which of FRAMEWORKS `python` has installed (found, not imported: a child, fast). Never
    raises: a Python that cannot be asked has none."""
    imports = {registry.get(n).FACTS.import_name: n for n in FRAMEWORKS}
    res = run([python, "-c", _FIND, *imports], FRAMEWORK_TIMEOUT_S)
    try:
        found = json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else []
    except (json.JSONDecodeError, IndexError):
        found = []
    return frozenset(imports[n] for n in found if n in imports) if isinstance(found, list) else frozenset()


def probe_inventory(*, run: Runner = run_command, python: str = sys.executable) -> dict[str, Any] | str:
    """The kernel inventory of the frameworks installed in `python` (harness/inventory.py), or why
    there is none. Never raises."""
    data = _child_json(run, [python, "-c", _INVENTORY, str(resources.harness_dir().parent)])
    return f"the inventory probe {data}" if isinstance(data, str) else data


def _child_json(run: Runner, argv: list[str]) -> dict[str, Any] | str:
    """The JSON object a child interpreter prints last, or 'exited N: <its last line>'."""
    res = run(argv, FRAMEWORK_TIMEOUT_S)
    lines = res.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if res.returncode == 0 and lines else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        said = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[-1]
        return f"exited {res.returncode}: {said}"
    return data
