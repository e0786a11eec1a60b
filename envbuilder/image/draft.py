"""A first image spec drafted from a project folder (`envbuilder init`): its package list found
(uv.lock, pyproject.toml or requirements.txt), the framework read from it, a command guessed from
the usual entry points; each finding said, and the draft checked by the spec loader itself.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder import frameworks
from envbuilder.errors import SpecError
from envbuilder.image.spec import NAME_RE, ImageSpec, check_spec_files, parse_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# A package that says which framework a project trains with, most telling first: the framework
# packages themselves; then what only runs on one of them (Lightning, Flax, Keras 2's tf-keras).
# Each framework's module names both (envbuilder/frameworks/NAME.py FACTS).
FRAMEWORK_OF = {
    **{p: fw.NAME for fw in frameworks.ALL_FRAMEWORK_MODULES for p in fw.FACTS.packages},
    **{p: fw.NAME for fw in frameworks.ALL_FRAMEWORK_MODULES for p in fw.FACTS.implied_by},
}
ENTRY_POINTS = ("train.py", "main.py", "src/train.py", "scripts/train.py", "src/main.py")
DEFAULT_FRAMEWORK = frameworks.DEFAULT
MAX_PROJECT_FILE = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """A drafted spec: its YAML text, the validated spec, and what was found (one line each)."""

    text: str
    spec: ImageSpec
    findings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Packages:
    field: str  # requirements, pyproject or uv_lock
    path: str
    pins: dict[str, str]  # canonical name -> exact version pinned ("" when not pinned)


def draft_spec(folder: Path, *, spec_dir: Path | None = None, schema_ref: str | None = None) -> Draft:
    """Draft a spec for the project in `folder`, to be written into `spec_dir` (default: the
    folder). Raises SpecError when a project file cannot be read or the draft would not load."""
    spec_dir = spec_dir or folder
    findings: list[str] = []
    packages = _find_packages(folder)
    if packages is None:
        findings.append("no uv.lock, pyproject.toml or requirements.txt: only the framework is installed")
    else:
        findings.append(f"packages: {packages.path} ({len(packages.pins)} named)")
    framework, companions, why = _framework(packages)
    findings.append(why)
    entry = next((e for e in ENTRY_POINTS if (folder / e).is_file()), None)
    findings.append(f"command: python {entry}" if entry else "command: none found (add `cmd:` yourself)")
    lines = [f"# yaml-language-server: $schema={schema_ref}"] if schema_ref else []
    lines += [
        "# Drafted by `envbuilder init`: check it, then `envbuilder up THIS_FILE`.",
        "# Every field: docs/project.md; the schema: envbuilder init --schema FILE.",
        f"name: {_name(folder)}",
        f"framework: {json.dumps(framework)}",
    ]
    if companions:
        lines.append(f"companions: {json.dumps(list(companions))}")
    if packages is not None:
        lines.append(f"{packages.field}: {json.dumps(_relative(folder / packages.path, spec_dir))}")
    lines.append(f"context: {json.dumps(_relative(folder, spec_dir))}")
    if entry:
        lines.append(f"cmd: {json.dumps(['python', entry])}")
    text = "\n".join(lines) + "\n"
    where = str(spec_dir / "envbuilder.yaml")
    spec = parse_spec(yaml.safe_load(text), where, base_dir=spec_dir)
    check_spec_files(spec)
    return Draft(text=text, spec=spec, findings=tuple(findings))


def _name(folder: Path) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", folder.resolve().name.lower()).strip("-._")[:63]
    return name if NAME_RE.fullmatch(name) else "project"


def _relative(path: Path, start: Path) -> str:
    try:
        rel = path.resolve().relative_to(start.resolve())
    except ValueError as exc:
        raise SpecError(
            f"{path} is not inside {start}",
            hint="write the spec into the project folder (or one of its parents' subfolders): "
            "a spec names its files relative to itself",
        ) from exc
    return rel.as_posix() or "."


def _find_packages(folder: Path) -> _Packages | None:
    """The project's package list, the most exact first: uv.lock, pyproject.toml's
    [project].dependencies, requirements.txt."""
    lock, pyproject, reqs = folder / "uv.lock", folder / "pyproject.toml", folder / "requirements.txt"
    if lock.is_file():
        data = _toml(lock)
        pins: dict[str, str] = {
            canonicalize_name(str(p.get("name", ""))): str(p.get("version", ""))
            for p in data.get("package", [])
            if isinstance(p, dict) and p.get("name")
        }
        return _Packages("uv_lock", "uv.lock", pins)
    if pyproject.is_file():
        deps = (_toml(pyproject).get("project") or {}).get("dependencies") or []
        if deps:
            return _Packages("pyproject", "pyproject.toml", _pins(str(d) for d in deps))
    if reqs.is_file():
        text = _read(reqs)
        lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
        return _Packages("requirements", "requirements.txt", _pins(line for line in lines if line))
    return None


def _pins(requirements: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # options (-r, --index-url), URLs: the lock reads them; the draft needs names
        exact = [s.version for s in req.specifier if s.operator == "==" and "*" not in s.version]
        out[canonicalize_name(req.name)] = exact[0] if exact else ""
    return out


def _framework(packages: _Packages | None) -> tuple[str, tuple[str, ...], str]:
    """The framework requirement, its companions found among the packages, and why."""
    pins = packages.pins if packages else {}
    found = [(name, FRAMEWORK_OF[name]) for name in FRAMEWORK_OF if name in pins]
    if not found:
        return DEFAULT_FRAMEWORK, (), f"framework: {DEFAULT_FRAMEWORK} (none named by the project: assumed)"
    by, framework = found[0]
    others = sorted({f for _, f in found} - {framework})
    version = pins.get(framework, "")
    requirement = f"{framework}=={version}" if version else framework
    companions = tuple(c for c in frameworks.get(framework).FACTS.companions if c in pins)
    why = f"framework: {requirement} (from {by} in {packages.path if packages else '-'})"
    if others:
        why += f"; also named: {', '.join(others)} (one framework per image: edit `framework:` to choose)"
    return requirement, companions, why


def _read(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_PROJECT_FILE + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read it: {exc.strerror}", hint="check its permissions") from exc
    if len(data) > MAX_PROJECT_FILE:
        raise SpecError(f"{path}: larger than {MAX_PROJECT_FILE} bytes", hint="is it the project's own file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start})", hint="is it a text file?") from exc


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}", hint="fix the file, or remove it") from exc
