"""Asking uv whether each candidate stack's whole install set (the framework with its extras and
its companions, as a build installs them) resolves to wheels for each Python the matrix offers it
with: the answers the resolver reads (matrix/installable.py). python_pick asks uv the same way,
for a spec's own requirements.

uv answers from the index metadata alone (`uv pip compile --only-binary :all: --python-version X.Y
--python-platform P`): nothing is downloaded but the metadata. An index that does not answer
(offline, download.pytorch.org unreachable) gives no answer, never a guess.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envbuilder.image.packages import PYTHON_PLATFORMS, LockSettings, uv_binary
from envbuilder.image.python_pick import WheelCheck, ask_uv
from envbuilder.lifecycle import run_child, scratch_dir
from envbuilder.matrix.installable import Key, answer_key
from envbuilder.matrix.model import InstallAnswer, Matrix
from envbuilder.platforms import machine_of, parse_platform

Asker = Callable[[Key], WheelCheck]
# uv's "X has no wheels with a matching Python ABI tag (e.g., `cp311`)" and its siblings
_NO_WHEEL = re.compile(
    r"^(?P<pkg>\S+) has no (?:usable )?wheels(?: with a matching (?P<what>Python ABI|Python implementation"
    r"|Python version|platform) tag(?: \(e\.g\., `(?P<tag>[^`]+)`\))?)?"
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run of the step found: the answers, and the sets no index answered for (why)."""

    answers: tuple[InstallAnswer, ...]
    unknown: tuple[tuple[Key, str], ...]


def plain_reason(cause: str, python: str, platform: str) -> str:
    """uv's cause in the resolver's words: `tensorrt==8.5.3.1 has no wheel for cp311 manylinux
    x86_64`; a cause of another shape is kept as uv wrote it."""
    m = _NO_WHEEL.match(cause)
    if m is None:
        return cause
    where = f"cp{python.replace('.', '')} manylinux {machine_of(parse_platform(platform))}"
    if m["what"] is None:  # uv's "has no usable wheels": sdists only, or wheels of other tags
        return f"{m['pkg']} has no usable wheel for {where} (source distributions or other tags only)"
    return f"{m['pkg']} has no wheel for {where}"


def install_sets(matrix: Matrix, frameworks: Iterable[str], platform: str) -> list[Key]:
    """Every distinct install set a candidate stack of `frameworks` can have, for each Python a
    base image of its strategy offers inside the release's Python range. Sorted, deduplicated."""
    pythons = {
        kind: sorted({b.python for b in matrix.base_images if b.kind == kind}, key=Version)
        for kind in ("slim", "cuda")
    }
    keys: set[Key] = set()
    wanted = set(frameworks)
    for table in matrix.frameworks:
        if table.name not in wanted:
            continue
        for rel in table.releases:
            spec = SpecifierSet(rel.python)
            for v in rel.variants:
                companions = tuple(req for _, req in v.companion_packages)
                for packages, kind in ((v.bundled_packages, "slim"), (v.system_packages, "cuda")):
                    if not packages or (kind == "cuda" and v.cuda is None):
                        continue
                    for py in pythons[kind]:
                        if py in spec:
                            keys.add(answer_key((*packages, *companions), v.index_url, py, platform))
    return sorted(keys, key=lambda k: (k[0], k[1] or "", Version(k[2]), k[3]))


def uv_asker(settings: LockSettings | None = None, uv_cache: Path | None = None) -> Asker:
    """An Asker running uv (python_pick's way), its cache shared between the questions."""
    settings = settings or LockSettings()

    def ask(key: Key) -> WheelCheck:
        reqs, index_url, python, platform = key
        answer = ask_uv(
            list(reqs), python, _uv_platform(platform), settings, extra_index=index_url, uv_cache=uv_cache
        )
        if answer.ok or answer.unknown:
            return answer
        return WheelCheck(ok=False, why=plain_reason(answer.why, python, platform))

    return ask


def _uv_platform(platform: str) -> str:
    """uv's --python-platform for a Docker platform: the package lock's own (packages.py)."""
    return PYTHON_PLATFORMS[machine_of(parse_platform(platform))]


def uv_version(settings: LockSettings | None = None) -> str:
    """`uv 0.13.9`, for the answers' source; `uv` when it cannot say."""
    try:
        with scratch_dir("uv-version"):
            proc = run_child([uv_binary((settings or LockSettings()).uv), "--version"], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "uv"
    words = proc.stdout.split()
    return " ".join(words[:2]) if proc.returncode == 0 and len(words) >= 2 else "uv"


def answer_sets(
    keys: Iterable[Key],
    ask: Asker,
    *,
    source: str,
    log: Callable[[str], None] = lambda _m: None,
) -> Outcome:
    """Ask `ask` about each set: an answer (with `source` and today's date) or, where no index
    answered, the reason it stays unknown."""
    today = datetime.date.today().isoformat()
    answers: list[InstallAnswer] = []
    unknown: list[tuple[Key, str]] = []
    silent: dict[str, str] = {}  # the host of an extra index that did not answer -> why: not asked again
    for key in keys:
        reqs, index_url, python, platform = key
        label = f"{', '.join(reqs)} py{python} {platform}"
        host = urlsplit(index_url).netloc if index_url else None
        if host is not None and host in silent:
            unknown.append((key, silent[host]))
            continue
        got = ask(key)
        if got.unknown:
            unknown.append((key, got.why))
            log(f"not checked: {label}: {got.why}")
            if host is not None and got.why.startswith("no index answered"):
                # one refusal per index host is enough (uv retries each for ~20 s): download.pytorch.org
                # is unreachable from the development machines, and every torch set is there
                silent[host] = f"{host} did not answer ({got.why})"
            continue
        log(f"{'ok' if got.ok else 'no'}: {label}{'' if got.ok else ': ' + got.why}")
        answers.append(
            InstallAnswer(
                requirements=reqs,
                index_url=index_url,
                python=python,
                platform=platform,
                ok=got.ok,
                why=got.why,
                source=f"{source}, {today}",
            )
        )
    return Outcome(answers=tuple(answers), unknown=tuple(unknown))
