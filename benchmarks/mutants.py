"""Planted one-line bugs at the trust-boundary decisions (issue 23 item 14): does the unit suite
catch them?

Each mutant replaces one exact snippet of one module (operator flips, dropped conditions, `[:1]`
instead of every item, a prefix compare instead of `==`, `>` for `>=`, a default flipped). The
script copies `envbuilder/` once into a scratch folder, plants one mutant at a time there, runs
only the unit test files that guard that decision (PYTHONPATH points at the copy; no bytecode is
written, so a stale .pyc cannot hide a mutant), and reports caught / survived:

    python benchmarks/mutants.py                      # every set
    python benchmarks/mutants.py --set b --out benchmarks/results/mutants-DATE.md
    python benchmarks/mutants.py --list               # the mutants, without running them

Set A was written before the boundary tests were extended (they were then written to catch it);
set B was written afterwards, without looking back at the tests, and is the honest measure.
A mutant whose snippet is not found exactly once is reported `stale` (the code moved on: update
it). Slow (one pytest process per mutant): `make mutants`, never part of `make test`.
Stdlib only (pytest is run as a subprocess).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # --root: another checkout (main, to compare)
UNIT = "tests/unit/"

RUN = ("test_runcheck.py", "test_run_boundary.py", "test_require_cuda.py", "test_archs.py")
RESOLVE = ("test_resolve_cases.py", "test_resolve_boundary.py")
JANITOR = ("test_orphaned_runs.py", "test_janitor_scope.py", "test_lifecycle.py", "test_engine.py")
LOCKS = ("test_commit.py", "test_janitor_scope.py")
CERTS = ("test_run_boundary.py", "test_attest_registry.py")


@dataclass(frozen=True, slots=True)
class Mutant:
    id: str
    file: str  # under envbuilder/
    old: str
    new: str
    why: str
    tests: tuple[str, ...]
    equivalent: str = ""  # why no test can tell it from the original (left out of the rate)


def m(
    id: str, file: str, old: str, new: str, why: str, tests: tuple[str, ...], equivalent: str = ""
) -> Mutant:
    return Mutant(id, file, old, new, why, tests, equivalent)


COV, REQ, ARCH = "run/coverage.py", "require_cuda.py", "archs.py"
RES, DRV = "resolve/resolver.py", "resolve/drivers.py"
OWN, LIFE, ENG, COMMIT = "engine/ownership.py", "lifecycle.py", "engine/docker_engine.py", "image/commit.py"

# --------------------------------------------------------------------------- set A (before the tests)
SET_A = (
    m(
        "A01",
        COV,
        'have.removeprefix("sha256:") == image.id.removeprefix("sha256:")',
        "short_id(have) == short_id(image.id)",
        "image ID compared on its 12-char prefix",
        RUN,
    ),
    m(
        "A02",
        COV,
        "bad = [g for g in host.gpus if",
        "bad = [g for g in host.gpus[:1] if",
        "arch checked on the first GPU only",
        RUN,
    ),
    m(
        "A03",
        COV,
        "if have is not None and have >= floor:",
        "if have is None or have >= floor:",
        "an unknown driver taken as new enough",
        RUN,
    ),
    m(
        "A04",
        COV,
        "if have is not None and have >= floor:",
        "if have is not None and have > floor:",
        "the driver floor itself refused (> for >=)",
        RUN,
    ),
    m(
        "A05",
        COV,
        "if not refused:\n            continue",
        "if not refused:\n            return None",
        "only the first passing NVIDIA_REQUIRE_* variable honoured",
        RUN,
    ),
    m(
        "A06",
        COV,
        "refused = [g for g in gpus if not",
        "refused = [g for g in gpus[:1] if not",
        "require-cuda checked for the first GPU only",
        RUN,
    ),
    m(
        "A07",
        COV,
        "new = sorted({g.name for g in host.gpus} - certified)",
        "new = sorted({g.name for g in host.gpus[:1]} - certified)",
        "GPU model checked on the first GPU only",
        RUN,
    ),
    m(
        "A08",
        COV,
        'cert.verdict != "certified-cpu-only" or host.access == "none"',
        'cert.verdict != "certified-cpu-only" or host.access != "toolkit"',
        "a CPU-only certificate refused only in toolkit mode",
        RUN,
    ),
    m(
        "A09",
        COV,
        'if cert is None or cert.verdict != "failed":',
        'if cert is None or not cert.verdict_reason or cert.verdict != "failed":',
        "a failed certificate without a reason taken as passing",
        RUN,
    ),
    m(
        "A10",
        COV,
        "first = certs[0] if certs else None",
        "first = certs[-1] if certs else None",
        "the refusals shown are the oldest certificate's",
        RUN,
    ),
    m(
        "A11",
        ARCH,
        "return self.cc[0] == gpu[0] and self.cc[1] <= gpu[1]",
        "return self.cc <= gpu",
        "SASS taken to run on a newer major",
        RUN,
    ),
    m(
        "A12",
        ARCH,
        'if self.suffix == "a":\n            return self.cc == gpu',
        'if self.suffix == "a":\n            return self.cc <= gpu',
        "arch-specific SASS taken as portable",
        RUN,
    ),
    m(
        "A13",
        REQ,
        'if name.startswith("NVIDIA_REQUIRE_") and',
        'if name == "NVIDIA_REQUIRE_CUDA" and',
        "only NVIDIA_REQUIRE_CUDA read, not the other NVIDIA_REQUIRE_* variables",
        RUN,
    ),
    m(
        "A14",
        REQ,
        'if env.get("NVIDIA_DISABLE_REQUIRE", "") in TRUE_WORDS:',
        'if env.get("NVIDIA_DISABLE_REQUIRE", ""):',
        "NVIDIA_DISABLE_REQUIRE=false disables the check",
        RUN,
    ),
    m("A15", REQ, "return (-1,)\n", "return (999,)\n", "an unknown version sorts above every version", RUN),
    m("A16", REQ, '">=": c >= 0', '">=": c > 0', ">= evaluated as >", RUN),
    m(
        "A17",
        REQ,
        "if all(f.holds(props) for f in t)",
        "if any(f.holds(props) for f in t)",
        "a term's factors OR-ed instead of AND-ed",
        RUN,
    ),
    m("A18", REQ, 'a = have or ""', "a = have or want", "an unknown brand matches any brand exemption", RUN),
    m(
        "A19",
        RES,
        "if Version(host.driver) < Version(floor):",
        "if driver_branch(host.driver) < driver_branch(floor):",
        "a driver in the floor's branch but below the floor accepted",
        RESOLVE,
    ),
    m(
        "A20",
        RES,
        "if cand.python not in parse_specifier(rel.python):",
        "if request.python is None and cand.python not in parse_specifier(rel.python):",
        "the Python range skipped when --python is given",
        RESOLVE,
    ),
    m(
        "A21",
        RES,
        "floor, why = max(floors, key=lambda f: Version(f[0]))",
        "floor, why = floors[0]",
        "only the MVC floor binds (the framework's own floor ignored)",
        RESOLVE,
    ),
    m(
        "A22",
        RES,
        "        for g in gpus:\n            kernel =",
        "        for g in gpus[:1]:\n            kernel =",
        "resolve checks the first GPU's arch only",
        RESOLVE,
    ),
    m(
        "A23",
        RES,
        "branch > model.last_branch:",
        "branch >= model.last_branch:",
        "a GPU refused on its own last driver branch",
        RESOLVE,
    ),
    m(
        "A24",
        RES,
        "branch < model.first_branch:",
        "branch <= model.first_branch:",
        "a GPU refused on its own first driver branch",
        RESOLVE,
    ),
    m(
        "A25",
        RES,
        "refused = [g for g, term in matched if term is None]",
        "refused = [g for g, term in matched[:1] if term is None]",
        "resolve's require-cuda: first GPU only",
        RESOLVE,
    ),
    m(
        "A26",
        RES,
        'if bad.path == "ptx" and how != "ptx":',
        'if bad.path == "ptx" or how != "ptx":',
        "known-bad rows apply only to the PTX path",
        RESOLVE,
    ),
    m(
        "A27",
        RES,
        "if Version(host.driver) < Version(toolkit_driver):",
        "if Version(host.driver) <= Version(toolkit_driver):",
        "the toolkit driver itself taken as MVC",
        RESOLVE,
    ),
    m(
        "A28",
        DRV,
        "if parse_driver(r.min_driver) <= parse_driver(driver):",
        "if parse_driver(r.min_driver) < parse_driver(driver):",
        "native CUDA of a toolkit driver one too low",
        RESOLVE,
    ),
    m(
        "A29",
        RES,
        "if request.python is None and py not in parse_specifier(rel.python):",
        "if py not in parse_specifier(rel.python):",
        "an out-of-range --python silently dropped",
        RESOLVE,
    ),
    m(
        "A30",
        OWN,
        'alive(c.labels.get(OWNER_LABEL, "")) is False',
        'alive(c.labels.get(OWNER_LABEL, "")) is not True',
        "containers of another host or with a malformed mark removed",
        JANITOR,
    ),
    m(
        "A31",
        LIFE,
        "if m is None or m.group(1) != (host or socket.gethostname()):",
        "if m is None:",
        "an owner on another host judged by this host's pids",
        JANITOR,
    ),
    m(
        "A32",
        LIFE,
        "return start is not None and start == int(m.group(3))",
        "return start is not None",
        "a reused pid taken for the owner",
        JANITOR,
    ),
    m(
        "A33",
        "run/certificates.py",
        "if r.image_id == info.id]",
        "if r.image_id[:19] == info.id[:19]]",
        "a local certificate found by an image-ID prefix",
        CERTS,
    ),
)

# --------------------------------------------------------------------------- set B (after the tests)
SET_B: tuple[Mutant, ...] = (
    m(
        "B01",
        COV,
        "return stack if stack is not None and stack.cuda else None",
        "return stack if stack is not None else None",
        "a CPU build held to the GPU checks",
        RUN,
    ),
    m(
        "B02",
        COV,
        "targets = matrix_targets(sass, ptx)",
        "targets = matrix_targets(sass, ())",
        "the stack's PTX ignored by the arch check",
        RUN,
    ),
    m(
        "B03",
        COV,
        "targets = matrix_targets(sass, ptx)",
        "targets = matrix_targets((*sass, *ptx), ())",
        "PTX read as SASS by the arch check",
        RUN,
    ),
    m(
        "B04",
        COV,
        "new = sorted({g.name for g in host.gpus} - certified)",
        "new = sorted(certified - {g.name for g in host.gpus})",
        "the model set difference reversed",
        RUN,
    ),
    m(
        "B05",
        COV,
        "have = _version(host.driver)",
        "have = _version(host.driver) or floor",
        "an unknown driver defaults to the floor",
        RUN,
    ),
    m(
        "B06",
        COV,
        "gpus: Sequence[GpuInfo | None] = host.gpus or (None,)",
        "gpus: Sequence[GpuInfo | None] = host.gpus[:1] or (None,)",
        "require-cuda on the first GPU only",
        RUN,
    ),
    m(
        "B07",
        COV,
        "req.admits(Properties.of(host.cuda_driver, host.driver, g))",
        "req.admits(Properties.of(host.cuda_driver, host.driver, None))",
        "require-cuda blind to the GPU",
        RUN,
    ),
    m(
        "B08",
        COV,
        'if have.removeprefix("sha256:") == image.id.removeprefix("sha256:"):',
        'if image.id.removeprefix("sha256:").startswith(have.removeprefix("sha256:")):',
        "image ID compared with startswith",
        RUN,
    ),
    m(
        "B09",
        COV,
        "return first, check_run(first, image, host)",
        "return first, check_run(first, image, host)[:1]",
        "only the first refusal shown",
        RUN,
    ),
    m(
        "B10",
        COV,
        'cert.verdict != "certified-cpu-only" or host.access == "none"',
        'cert.verdict != "certified-cpu-only" or host.requested == "none"',
        "cpu-only judged on the request, not the access",
        RUN,
    ),
    m(
        "B11",
        REQ,
        "if prop not in VERSION_PROPERTIES + STRING_PROPERTIES:",
        "if prop not in VERSION_PROPERTIES:",
        "the brand property skipped (exemptions lose their brand)",
        RUN,
    ),
    m(
        "B12",
        REQ,
        'OPERATORS = ("!=", "<=", ">=", "=", "<", ">")',
        'OPERATORS = ("!=", "<", ">", "<=", ">=", "=")',
        "< matched before <=",
        RUN,
    ),
    m("B13", REQ, '"<": c < 0', '"<": c <= 0', "< evaluated as <=", RUN),
    m(
        "B14",
        REQ,
        "if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:",
        "if not all(p.isdigit() for p in parts):",
        "four-part versions compared",
        RUN,
    ),
    m(
        "B15",
        REQ,
        '"cuda>=" + ".".join(legacy.split(".")[:2])',
        '"cuda>=" + legacy',
        "a legacy CUDA_VERSION compared with its patch",
        RUN,
    ),
    m(
        "B16",
        REQ,
        'if env.get("NVIDIA_DISABLE_REQUIRE", "") in TRUE_WORDS:',
        'if "NVIDIA_DISABLE_REQUIRE" in env:',
        "NVIDIA_DISABLE_REQUIRE disables by its presence",
        RUN,
    ),
    m("B17", ARCH, "pool = sass or fitting", "pool = fitting", "PTX preferred to a fitting SASS", RUN),
    m(
        "B18",
        ARCH,
        'if self.kind == "sass" or self.suffix == "f":',
        'if self.kind == "sass":',
        "family-specific PTX taken as portable",
        RUN,
    ),
    m(
        "B19",
        RES,
        "    out = []\n    for g in host.gpus:",
        "    out = []\n    for g in host.gpus[:1]:",
        "GPU driver-branch support checked on the first GPU only",
        RESOLVE,
    ),
    m(
        "B20",
        RES,
        "                floors.append((floor, why))\n",
        "                pass\n",
        "the PTX JIT floor ignored",
        RESOLVE,
    ),
    m(
        "B21",
        RES,
        "if host.driver is None or image.require_cuda is None:",
        "if host.driver is None or image.require_cuda is None or not host.gpus:",
        "resolve's require-cuda skipped on a host given without GPUs",
        RESOLVE,
        "resolve() turns a host without GPUs into a CPU-only request, so this check never sees one",
    ),
    m(
        "B22",
        RES,
        "if cand.python not in parse_specifier(rel.python):",
        'if cand.python not in parse_specifier(rel.python.split(",")[0]):',
        "only the lower bound of the Python range enforced",
        RESOLVE,
    ),
    m(
        "B23",
        DRV,
        "if parse_driver(r.min_driver) <= parse_driver(driver):",
        "if r.min_driver <= driver:",
        "drivers compared as strings",
        RESOLVE,
    ),
    m(
        "B24",
        DRV,
        "if parse_version(major_minor(r.version)) >= parse_version(cuda):",
        "if parse_version(major_minor(r.version)) > parse_version(cuda):",
        "the JIT floor one release late",
        RESOLVE,
    ),
    m(
        "B25",
        OWN,
        "path = os.path.realpath(data_dir if data_dir is not None else user_data_dir())",
        "path = str(data_dir if data_dir is not None else user_data_dir())",
        "the data folder's mark taken from its unresolved path",
        JANITOR,
    ),
    m(
        "B26",
        OWN,
        "if c.labels.get(DATA_LABEL) == data",
        "if c.labels.get(DATA_LABEL, data) == data",
        "a container without a data mark taken as this folder's",
        JANITOR,
    ),
    m(
        "B27",
        OWN,
        "return {**dict(labels or {}), OWNER_LABEL: owner_mark(), DATA_LABEL: data_mark(), "
        "PURPOSE_LABEL: purpose}",
        "return {OWNER_LABEL: owner_mark(), DATA_LABEL: data_mark(), PURPOSE_LABEL: purpose, "
        "**dict(labels or {})}",
        "a caller's labels override the owner and data marks",
        JANITOR,
    ),
    m(
        "B28",
        ENG,
        'filters={"label": [OWNER_LABEL, f"{DATA_LABEL}={mine}"]}',
        'filters={"label": OWNER_LABEL}',
        "the janitor asks the daemon for every user's containers",
        JANITOR,
    ),
    m("B29", COMMIT, 'f"tag:{daemon}/{t}"', 'f"tag:{t}"', "tags locked across daemons", LOCKS),
    m(
        "B30",
        COMMIT,
        "if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:",
        "if not stat.S_ISREG(st.st_mode):",
        "a hard-linked lock file accepted",
        LOCKS,
    ),
    m(
        "B31",
        COMMIT,
        "flags = os.O_NOFOLLOW | os.O_CLOEXEC",
        "flags = os.O_CLOEXEC",
        "a symlinked lock file followed",
        LOCKS,
    ),
    m(
        "B32",
        COMMIT,
        "if now is None or now.id != image_id:",
        "if now is None:",
        "an undo moves a tag another build moved since",
        LOCKS,
    ),
    m(
        "B33",
        COMMIT,
        "if st.st_uid not in (0, os.getuid()) and not st.st_mode & stat.S_ISVTX:",
        "if False:",
        "another user's non-sticky lock folder accepted",
        LOCKS,
    ),
    m(
        "B34",
        COMMIT,
        "path.chmod(0o1777)",
        "path.chmod(0o777)",
        "the lock folder made without the sticky bit",
        LOCKS,
    ),
    m(
        "B35",
        "run/certificates.py",
        'store.list(image=info.id, origin="local")',
        "store.list(image=info.id)",
        "an imported certificate taken as a local one",
        CERTS,
    ),
    m(
        "B36",
        COV,
        'if cert is None or host.access == "none" or not _gpu_cert(cert):',
        'if cert is None or host.access == "none":',
        "a CPU-only certificate checked for GPU models",
        RUN,
    ),
)

SETS = {"a": SET_A, "b": SET_B}


# --------------------------------------------------------------------------- running


def _tests(names: tuple[str, ...]) -> list[str]:
    return [UNIT + n for n in names if (ROOT / UNIT / n).exists()]


def _pytest(pkg_parent: Path, tests: list[str], timeout: float) -> tuple[str, float, str]:
    env = {**os.environ, "PYTHONPATH": str(pkg_parent), "PYTHONDONTWRITEBYTECODE": "1"}
    # -P: `python -m` would put the working folder (the unmutated envbuilder/) first on sys.path.
    cmd = [sys.executable, "-P", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    try:
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "caught (timeout)", time.monotonic() - start, ""
    took = time.monotonic() - start
    tail = (res.stdout + res.stderr).strip().splitlines()
    last = tail[-1] if tail else ""
    if res.returncode == 0:
        return "survived", took, last
    if res.returncode == 1:
        return "caught", took, last
    return f"error (pytest exit {res.returncode})", took, last


def _first_failure(out: str) -> str:
    return out[:160]


def run(mutants: tuple[Mutant, ...], timeout: float) -> list[tuple[Mutant, str, float, str]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="envbuilder-mutants-") as scratch:
        parent = Path(scratch)
        pkg = parent / "envbuilder"
        shutil.copytree(ROOT / "envbuilder", pkg, ignore=shutil.ignore_patterns("__pycache__"))
        for shipped in ("matrices", "templates", "images"):  # resources.shipped_dir looks beside it
            (parent / shipped).symlink_to(ROOT / shipped)
        where = subprocess.run(
            [sys.executable, "-P", "-c", "import envbuilder; print(envbuilder.__file__)"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(parent)},
            capture_output=True,
            text=True,
        ).stdout.strip()
        if not where.startswith(str(pkg)):
            sys.exit(f"the tests would import envbuilder from {where!r}, not the mutated copy in {pkg}")
        base_tests = sorted({t for mu in mutants for t in _tests(mu.tests)})
        verdict, took, last = _pytest(parent, base_tests, timeout * 3)
        if verdict != "survived":
            sys.exit(f"the unmutated code fails its own tests ({verdict}): {last}")
        print(f"baseline: {len(base_tests)} test files pass ({took:.0f} s)", file=sys.stderr)
        for mu in mutants:
            path = pkg / mu.file
            original = path.read_text()
            if original.count(mu.old) != 1:
                results.append((mu, "stale", 0.0, f"snippet found {original.count(mu.old)} times"))
                continue
            path.write_text(original.replace(mu.old, mu.new))
            try:
                verdict, took, last = _pytest(parent, _tests(mu.tests), timeout)
            finally:
                path.write_text(original)
            if mu.equivalent and verdict == "survived":
                verdict = "equivalent"
            print(f"{mu.id} {verdict:10} {took:5.1f}s  {mu.why}", file=sys.stderr)
            results.append((mu, verdict, took, last))
    return results


def report(results: list[tuple[Mutant, str, float, str]], sets: str) -> str:
    caught = [r for r in results if r[1].startswith("caught")]
    survived = [r for r in results if r[1] == "survived"]
    equivalent = [r for r in results if r[1] == "equivalent"]
    other = [r for r in results if not r[1].startswith("caught") and r[1] not in ("survived", "equivalent")]
    judged = len(caught) + len(survived)
    rate = 100.0 * len(caught) / judged if judged else 0.0
    lines = [
        f"# Planted one-line bugs at the trust boundaries (set {sets})",
        "",
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}), "
        f"checkout {ROOT}, `python benchmarks/mutants.py` (`make mutants`).",
        "",
        f"**{len(caught)} of {judged} caught ({rate:.1f}%)**, {len(survived)} survived, "
        f"{len(equivalent)} equivalent (left out), {len(other)} stale/error.",
        "",
        "| id | module | mutant | verdict | seconds |",
        "|---|---|---|---|---|",
    ]
    for mu, verdict, took, _ in results:
        lines.append(f"| {mu.id} | {mu.file} | {mu.why} | {verdict} | {took:.1f} |")
    if survived or other:
        lines += ["", "Survivors and errors, with the last line pytest printed:", ""]
        lines += [f"- {mu.id}: {verdict}: `{last}`" for mu, verdict, _, last in survived + other]
    if equivalent:
        lines += ["", "Equivalent mutants (no input tells them from the original):", ""]
        lines += [f"- {mu.id}: {mu.equivalent}" for mu, _, _, _ in equivalent]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="ab", help="which sets: a, b or ab (default)")
    ap.add_argument("--only", nargs="*", default=(), help="mutant ids to run")
    ap.add_argument("--out", type=Path, help="write the markdown report here")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument(
        "--root", type=Path, help="the checkout whose code and tests are measured (default: this one)"
    )
    args = ap.parse_args()
    if args.root is not None:
        global ROOT
        ROOT = args.root.resolve()
    mutants = tuple(mu for s in args.set for mu in SETS[s] if not args.only or mu.id in args.only)
    if args.list:
        for mu in mutants:
            print(f"{mu.id}  {mu.file:28} {mu.why}")
        return
    results = run(mutants, args.timeout)
    text = report(results, args.set)
    if args.out:
        args.out.write_text(text)
    print(text)
    survived = sum(1 for r in results if r[1] == "survived")
    sys.exit(1 if survived or any(r[1] == "stale" for r in results) else 0)


if __name__ == "__main__":
    main()
