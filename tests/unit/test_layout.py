"""The house reads as the flow: walk envbuilder's import graph (every import, lazy and type-only
ones included) and fail on a private name used across modules, a circle between packages or
modules, or an arrow that runs back up the flow declared below.

A package imports only packages before it in FLOW (and the shared modules). Two places differ
from the drawing in design.md, and say why:
  - engine/ comes before image/: the drawing's image -> engine is build handing its Dockerfile to
    Docker, which in code is image/build.py calling engine/; engine (the one importer of docker)
    imports no stage, and every stage that drives Docker (image, certify, run, doctor) uses it.
  - runtime/ comes right after engine/: a runtime (Docker, Apptainer, enroot, ...) is the engine
    or a runtime program with its GPU access modes; it reads host/ (the modes' facts) and engine/,
    and everything that starts a container (image, certify, run, fleet, doctor) goes through it.
  - registry/ and attest/ sit between certify/ and run/: attest signs certificates (certify's
    output) and pushes them through registry/; run verifies them before it starts an image.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "envbuilder"

# Small helpers every stage may use; they import nothing but each other.
SHARED = {
    "envbuilder",
    "errors",
    "versions",
    "atomic",
    "bounded",
    "typed",
    "resources",
    "hashing",
    "imageref",
    "archs",
    "require_cuda",
    "tables",
    "lifecycle",
    "platforms",
}
FLOW = (
    "matrix",
    "host",
    "resolve",
    "engine",
    "runtime",
    "image",
    "certify",
    "registry",
    "attest",
    "run",
    "fleet",
    "report",
    "doctor",
    "cli",
    "__main__",
)
HARNESS = "harness"  # the payload copied into images: imports nothing of envbuilder; anyone may read it
# doctor checks this machine: it reads the host, the matrix, resolve, engine, the runtimes (each
# GPU access mode's flags, which it prints) and certify, nothing else.
DOCTOR_READS = {"host", "matrix", "resolve", "engine", "runtime", "certify"}


@dataclass(frozen=True, slots=True)
class Import:
    importer: str  # dotted module name
    target: str  # dotted module name imported (or imported from)
    names: tuple[str, ...]  # names taken from it (empty: `import target`)
    line: int


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(mods: dict[str, Path]) -> Iterator[Import]:
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:  # the harness imports itself relatively (it runs outside envbuilder)
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, module] if module else base)
                if module.split(".")[0] != "envbuilder":
                    continue
                taken = tuple(a.name for a in node.names)
                yield Import(name, module, taken, node.lineno)
                for sub in taken:  # `from envbuilder.run import coverage` imports a module
                    if f"{module}.{sub}" in mods:
                        yield Import(name, f"{module}.{sub}", (), node.lineno)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "envbuilder":
                        yield Import(name, alias.name, (), node.lineno)


def unit(module: str) -> str:
    """The package (or shared module) a module belongs to: envbuilder.run.launch -> run."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "envbuilder"


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


MODS = modules()
IMPORTS = list(imports(MODS))


def test_every_package_has_its_place_in_the_flow() -> None:
    units = {unit(m) for m in MODS}
    unplaced = sorted(units - SHARED - set(FLOW) - {HARNESS})
    assert not unplaced, f"declare where {unplaced} sits in FLOW or SHARED (tests/unit/test_layout.py)"


def test_no_private_name_is_used_across_modules() -> None:
    bad = [
        f"{i.importer}:{i.line} imports {name} from {i.target}"
        for i in IMPORTS
        for name in i.names
        if private(name) and i.target != i.importer
    ]
    bad += [
        f"{i.importer}:{i.line} imports the private module {i.target}"
        for i in IMPORTS
        if any(private(p) for p in i.target.split(".")) and unit(i.target) != unit(i.importer)
    ]
    for name, path in MODS.items():  # `module._name` on a module it imported
        bound = {}
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("envbuilder"):
                for a in node.names:
                    if f"{node.module}.{a.name}" in MODS:
                        bound[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("envbuilder.") and a.asname:
                        bound[a.asname] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and private(node.attr)
            ):
                bad.append(f"{name}:{node.lineno} uses {bound[node.value.id]}.{node.attr}")
    assert not bad, "\n".join(bad)


def test_arrows_run_down_the_flow_only() -> None:
    rank = {u: i for i, u in enumerate(FLOW)}
    bad = []
    for i in IMPORTS:
        src, dst = unit(i.importer), unit(i.target)
        if src == dst or dst == HARNESS:
            continue
        where = f"{i.importer}:{i.line} imports {i.target}"
        if src == HARNESS:
            bad.append(f"{where}: the harness imports nothing of envbuilder")
        elif src in SHARED and dst not in SHARED:
            bad.append(f"{where}: a shared module imports no stage")
        elif src == "doctor" and dst not in SHARED | DOCTOR_READS:
            bad.append(f"{where}: doctor reads only {sorted(DOCTOR_READS)}")
        elif src in rank and dst in rank and rank[dst] > rank[src]:
            bad.append(f"{where}: {dst} comes after {src} in the flow")
    assert not bad, "\n".join(bad)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_circles_between_packages_or_modules() -> None:
    packages: dict[str, set[str]] = defaultdict(set)
    modules_: dict[str, set[str]] = defaultdict(set)
    for i in IMPORTS:
        if unit(i.importer) != unit(i.target):
            packages[unit(i.importer)].add(unit(i.target))
        # A package's __init__ may gather its own modules (cli registers its commands that way);
        # any other circle between two modules is a defect.
        gathers = MODS[i.importer].name == "__init__.py" and i.target.startswith(i.importer + ".")
        if i.target in MODS and i.target != i.importer and not gathers:
            modules_[i.importer].add(i.target)
    for graph in (packages, modules_):
        for node in list(graph):
            for child in graph[node]:
                graph.setdefault(child, set())
    assert _cycles(packages) == [], "packages import each other in a circle"
    assert _cycles(modules_) == [], "modules import each other in a circle"


def test_the_checks_see_what_they_must() -> None:
    """The walk itself works: it finds known arrows, and each check fails on a planted defect."""
    found = {(unit(i.importer), unit(i.target)) for i in IMPORTS}
    assert ("run", "certify") in found and ("resolve", "matrix") in found
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert private("_covered") and not private("__version__") and not private("covered")
