"""The default Python of a spec that names none (issue 13): the newest Python for which the
framework *and* the spec's requirements have wheels.

The framework's side is the matrix's wheel facts (the resolver keeps a release's Pythons inside
its `python` range). The requirements' side is asked of uv: `uv pip compile --python-version X
--python-platform P --only-binary :all:` resolves them for X, or says which has no wheel. Each
answer is cached for a day under the cache folder (PyPI gains wheels; a find-links folder's
listing is part of the key). uv is consulted only when the spec has requirements; when no index
answers, the framework's facts decide and the reason says the requirements were not checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from envbuilder.atomic import write_text_atomic
from envbuilder.image.packages import PYTHON_PLATFORMS, LockSettings, uv_binary, uv_env
from envbuilder.image.secrets import redact
from envbuilder.image.spec import ImageSpec
from envbuilder.lifecycle import run_child, scratch_dir
from envbuilder.resolve.model import Stack
from envbuilder.resources import cache_dir

CACHE_TTL_S = 24 * 3600
# uv's words when it could not ask an index (offline, DNS, TLS, refused): not an answer
_UNREACHABLE = (
    "network was disabled",
    "not found in the cache",
    "Failed to fetch",
    "dns error",
    "error sending request",
    "Could not connect",
    "tcp connect error",
    "certificate",
)
UV_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class WheelCheck:
    """uv's answer for one Python: resolves (`ok`), no wheels (`why`), or not known (`unknown`)."""

    ok: bool
    why: str = ""
    unknown: bool = False


Checker = Callable[[str], WheelCheck]


@dataclass(frozen=True, slots=True)
class PythonPick:
    python: str
    reason: str  # "python 3.12: newest with wheels for torch 2.11.0 and numpy, scipy; 3.13 lacks: ..."


def requirement_names(spec: ImageSpec) -> list[str]:
    """The spec's requirements by name, for the reason (`numpy, scipy`)."""
    names = [re.split(r"[\s<>=!~;\[@(]", r, maxsplit=1)[0] for r in spec.requirements]
    if spec.requirements_file:
        names.append(f"the packages of {spec.requirements_file}")
    return names


def pick_python(stack: Stack, candidates: list[str], spec: ImageSpec, check: Checker | None) -> PythonPick:
    """The newest of `candidates` (Pythons the resolver accepts for this stack, newest first,
    starting at stack.python) whose requirements resolve; `check` None: the spec has none."""
    fw = f"{stack.framework} {stack.version}"
    if check is None:
        return PythonPick(
            stack.python, f"python {stack.python}: newest with wheels for {fw} (the matrix's wheel facts)"
        )
    names = ", ".join(requirement_names(spec))
    lacking: list[tuple[str, str]] = []
    for python in candidates:
        answer = check(python)
        if answer.unknown:
            newest = candidates[0]
            return PythonPick(
                newest,
                f"python {newest}: newest with wheels for {fw} (the matrix's wheel facts); {names} not "
                f"checked: {answer.why}",
            )
        if answer.ok:
            why = f"; {_lacking(lacking)}" if lacking else ""
            return PythonPick(python, f"python {python}: newest with wheels for {fw} and {names}{why}")
        lacking.append((python, answer.why))
    newest = candidates[0]
    tried = _lacking(lacking)
    return PythonPick(
        newest,
        f"python {newest}: newest with wheels for {fw}; no Python has wheels for all of {names} ({tried})",
    )


def uv_checker(
    spec: ImageSpec, settings: LockSettings | None, platform: str = "x86_64", *, cache: Path | None = None
) -> Checker | None:
    """A Checker asking uv (cached), or None when the spec has no requirements to check."""
    if not spec.requirements and not spec.requirements_file:
        return None
    settings = settings or LockSettings()
    lines = list(spec.requirements)
    if spec.requirements_file:
        lines.append(f"-r {(Path(spec.path).parent / spec.requirements_file).resolve()}")
    folder = cache or cache_dir() / "python-wheels"

    def check(python: str) -> WheelCheck:
        key = _cache_key(lines, python, PYTHON_PLATFORMS[platform], settings)  # type: ignore[index]
        hit = _cached(folder / f"{key}.json")
        if hit is not None:
            return hit
        if _offline_without_wheels(settings):
            return WheelCheck(
                ok=False, why="uv is offline (UV_OFFLINE) with no find-links to read", unknown=True
            )
        answer = ask_uv(lines, python, PYTHON_PLATFORMS[platform], settings)  # type: ignore[index]
        if not answer.unknown:
            with contextlib.suppress(OSError):  # an unwritable cache only costs time
                folder.mkdir(parents=True, exist_ok=True)
                write_text_atomic(
                    folder / f"{key}.json",
                    json.dumps({"ok": answer.ok, "why": answer.why, "at": time.time()}),
                )
        return answer

    return check


def _offline_without_wheels(settings: LockSettings) -> bool:
    """uv told to stay offline and given no local wheels: it could only say so (no uv started)."""
    offline = os.environ.get("UV_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    return offline and not settings.find_links and not os.environ.get("UV_FIND_LINKS")


def _cache_key(lines: list[str], python: str, platform: str, settings: LockSettings) -> str:
    listings = [sorted(p.name for p in f.iterdir()) if f.is_dir() else [] for f in settings.find_links]
    doc = [
        lines,
        python,
        platform,
        settings.default_index,
        settings.no_index,
        [str(f) for f in settings.find_links],
        listings,
    ]
    for line in lines:
        if line.startswith("-r "):
            path = Path(line[3:])
            doc.append(path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "")
    return hashlib.sha256(json.dumps(doc, default=str).encode()).hexdigest()[:32]


def _cached(path: Path) -> WheelCheck | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if time.time() - float(doc["at"]) < CACHE_TTL_S:
            return WheelCheck(ok=bool(doc["ok"]), why=str(doc["why"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def ask_uv(
    lines: list[str],
    python: str,
    platform: str,
    settings: LockSettings,
    *,
    extra_index: str | None = None,
    uv_cache: Path | None = None,
) -> WheelCheck:
    """uv's answer for `lines` on `python` and `platform` (uv's --python-platform), wheels only.
    `extra_index`: a framework's own index (torch's), searched before the default one;
    `uv_cache`: a uv cache folder to share between many questions (default: a fresh one)."""
    with scratch_dir("pywheels") as tmp:
        reqs = Path(tmp) / "requirements.in"
        reqs.write_text("\n".join(lines) + "\n", encoding="utf-8")
        argv = [uv_binary(settings.uv), "pip", "compile", str(reqs), "-o", str(Path(tmp) / "out.txt")]
        argv += ["--python-version", python, "--python-platform", platform, "--only-binary", ":all:"]
        # uv's cache in our own temp folder (removed with it, swept after a SIGKILL): with
        # --no-cache uv would make one in TMPDIR and leave it there when stopped (D8).
        cache = uv_cache or Path(tmp) / "uv-cache"
        argv += ["--no-config", "--no-header", "--quiet", "--cache-dir", str(cache)]
        if extra_index:
            argv += ["--index", extra_index]
        if settings.default_index:
            argv += ["--default-index", settings.default_index]
        if settings.no_index:
            argv.append("--no-index")
        for f in settings.find_links:
            argv += ["--find-links", str(f.resolve())]
        try:
            proc = run_child(argv, env=uv_env(settings, Path(tmp)), timeout=UV_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return WheelCheck(ok=False, why=f"uv did not answer ({exc})", unknown=True)
    if proc.returncode == 0:
        return WheelCheck(ok=True)
    text = redact(proc.stderr, settings.secrets)
    if any(sign in text for sign in _UNREACHABLE):
        return WheelCheck(ok=False, why=f"no index answered ({first_cause(text)})", unknown=True)
    if "No solution found" in text or "unsatisfiable" in text:
        return WheelCheck(ok=False, why=first_cause(text))
    return WheelCheck(ok=False, why=f"no index answered ({first_cause(text)})", unknown=True)


def first_cause(stderr: str) -> str:
    """uv's reason, shortened: its `cause:` line (`Because scipy==1.11.4 has no usable wheels and
    you require scipy==1.11.4, ...`), else its first line."""
    lines = [ln.strip(" \u2570\u2500\u25b6\u00d7") for ln in stderr.splitlines() if ln.strip()]
    causes = [ln.partition(":")[2].strip() for ln in lines if ln.startswith("cause:")]
    causes += [ln for ln in lines if ln.startswith("Because ")]
    text = " ".join((causes or lines or ["uv failed"])[0].split())
    text = re.sub(r"^Because ", "", text)
    text = re.split(r",? and you require |, we can conclude ", text, maxsplit=1)[0]
    return text if len(text) <= 240 else text[:237] + "..."


def _lacking(lacking: list[tuple[str, str]]) -> str:
    """`3.14, 3.13 lack: scipy==1.11.4 has no usable wheels` (Pythons with the same cause together)."""
    causes: dict[str, list[str]] = {}
    for python, why in lacking:
        causes.setdefault(why, []).append(python)
    return "; ".join(f"{', '.join(ps)} {'lack' if len(ps) > 1 else 'lacks'}: {w}" for w, ps in causes.items())


def candidate_pythons(stack: Stack, pythons: list[str]) -> list[str]:
    """`pythons` (what the resolver offers for the stack's kind of base) from stack.python down."""
    top = Version(stack.python)
    return sorted({p for p in pythons if Version(p) <= top} | {stack.python}, key=Version, reverse=True)
