"""The package lock: every Python package of an image pinned to one wheel and its sha256, for one
target (Linux, the stack's Python, x86_64 or aarch64), resolved on the host by uv.

Two resolutions, so the image keeps the framework in its own layer: the framework (and the
spec's companions) from the stack's own index, then the project's packages (requirements list
or file, pyproject.toml, uv.lock) with the framework pins as constraints, from the spec's
indexes, the framework index and PyPI. uv writes PEP 751 pylock.toml; we keep, per package, the
one wheel chosen for the target. The install step (render) checks every hash.

A base image that already holds the framework in its own environment (`build --base-venv`, as
NGC images do) provides the framework group instead: those packages are recorded as the base
has them (group "base": version and the digest of their installed RECORD, no wheel), checked
against the stack's pins, and checked again in the built image; nothing is resolved for them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from packaging import tags
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envbuilder.errors import LockError, SpecError, log_tail
from envbuilder.hashing import sha256_file_hex
from envbuilder.image.hints import tls_hint
from envbuilder.image.secrets import Secrets, is_secret_ref, recorded_url, redact
from envbuilder.image.sources import (
    INDEX_NAME_RE,
    INDEX_URL_RE,
    REL_PATH_RE,
    SECRET_ID_RE,
    USERNAME_RE,
    PackageIndex,
    requirement_files,
    spec_file,
)
from envbuilder.image.spec import ImageSpec
from envbuilder.lifecycle import run_child, scratch_dir, sweep_temp_dirs
from envbuilder.resolve.model import Stack

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Group = Literal["framework", "project", "base"]  # base: provided by the base image
Platform = Literal["x86_64", "aarch64"]
PLATFORMS: tuple[Platform, ...] = ("x86_64", "aarch64")
DEFAULT_INDEX = "https://pypi.org/simple"
# uv's target for each machine. manylinux_2_28 (glibc 2.28) is what torch, jax and TensorFlow
# wheels are built for, and every base OS in matrices/base_images.yaml has a newer glibc
# (ubuntu20.04: 2.31), so a wheel chosen for it loads in any of our images.
PYTHON_PLATFORMS: Mapping[Platform, str] = {
    "x86_64": "x86_64-manylinux_2_28",
    "aarch64": "aarch64-manylinux_2_28",
}
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
WHEEL_RE = re.compile(r"^[A-Za-z0-9_.+!-]+\.whl$")
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
VERSION_RE = re.compile(r"^[A-Za-z0-9.+!_-]{1,64}$")
PYTHON_RE = re.compile(r"^3\.[0-9]{1,2}$")
PYTHON_PLATFORM_RE = re.compile(r"^(?:x86_64|aarch64)-manylinux_2_[0-9]{1,3}$")
# Where uv saw a wheel: a URL without whitespace or control characters (a `<secret:NAME>` prefix
# stands for an index given as a secret).
URL_RE = re.compile(r"^(?:(?:https?|file)://|<secret:[A-Za-z0-9_.-]{1,64}>/)[!-~]{1,2000}$")
RESOLVER_RE = re.compile(r"^uv [0-9][A-Za-z0-9.+-]{0,40}$")
_HINT = "re-lock: envbuilder lock SPEC (or build SPEC without --lock)"
BASE_RESOLVER = "none: the framework is the base image's own"  # PackageLock.resolver without uv


@dataclass(frozen=True, slots=True, kw_only=True)
class LockedPackage:
    """One package, pinned to one wheel file (what the installer must get, byte for byte)."""

    name: str  # canonical (PEP 503)
    version: str
    wheel: str  # file name ("" for group base: installed in the base, no wheel)
    sha256: str  # of the wheel; for group base, of the installed RECORD ("" when it has none)
    size: int | None
    urls: tuple[str, ...]  # where uv saw that file (indexes, find-links)
    group: Group

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "wheel": self.wheel,
            "sha256": self.sha256,
            "size": self.size,
            "urls": list(self.urls),
            "group": self.group,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PackageLock:
    """Every package of one target, and what they were resolved from."""

    platform: Platform
    python: str  # X.Y
    python_platform: str  # uv's --python-platform
    resolver: str  # "uv 0.13.9"
    framework_index: str | None  # where the framework group came from (None: find-links only)
    default_index: str | None  # PyPI or its mirror (None: --no-index)
    indexes: tuple[PackageIndex, ...]  # the spec's, in priority order
    find_links: tuple[str, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()  # (file relative to the spec, sha256) read for it
    packages: tuple[LockedPackage, ...] = field(default=())

    def group(self, group: Group) -> tuple[LockedPackage, ...]:
        return tuple(p for p in self.packages if p.group == group)

    def requirements(self, group: Group) -> str:
        """The installer's input: one `name==version --hash=sha256:...` line per package."""
        lines = [
            f"{p.pin} --hash=sha256:{p.sha256}\n" for p in sorted(self.group(group), key=lambda p: p.name)
        ]
        return "".join(lines)

    def index_urls(self, group: Group) -> tuple[tuple[str, str], ...]:
        """Where the build may fetch a group's wheels: (name, url), highest priority first."""
        return install_indexes(
            group,
            framework_index=self.framework_index,
            default_index=self.default_index,
            indexes=self.indexes,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "python": self.python,
            "python_platform": self.python_platform,
            "resolver": self.resolver,
            "framework_index": self.framework_index,
            "default_index": self.default_index,
            "indexes": [i.to_dict() for i in self.indexes],
            "find_links": list(self.find_links),
            "inputs": dict(self.inputs),
            "packages": [p.to_dict() for p in self.packages],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LockSettings:
    """Where to resolve from, beyond the stack and the spec (mirrors, local wheels)."""

    default_index: str | None = None  # replaces PyPI (a mirror)
    framework_index: str | None = None  # replaces the stack's index (a mirror of it)
    find_links: tuple[Path, ...] = ()  # local wheel folders (a wheelhouse), searched first
    no_index: bool = False  # only find_links: resolve offline
    uv: str | None = None  # the uv binary (default: the one installed with envbuilder)
    ca_bundle: Path | None = None  # also trusted for the indexes (a TLS-intercepting proxy, a private CA)
    # What was given as a secret, (name, value): an index URL among them is recorded in the lock
    # as `<secret:NAME>`, and every value is taken out of every message (redact).
    secrets: Secrets = ()


def install_indexes(
    group: Group,
    *,
    framework_index: str | None,
    default_index: str | None,
    indexes: tuple[PackageIndex, ...],
) -> tuple[tuple[str, str], ...]:
    """The indexes a group was resolved from, as (name, url), highest priority first: the
    framework group from the framework index alone (or the default index when the stack has
    none); the project group from the spec's indexes, the framework index, the default index.
    Names: "framework", "pypi" (the default index or its mirror), the spec's own."""
    out: list[tuple[str, str]] = []
    if group == "project":
        out += [(i.name, i.url) for i in indexes]
    if framework_index is not None:
        out.append(("framework", framework_index))
    if default_index is not None and (group == "project" or framework_index is None):
        out.append(("pypi", default_index))
    first = {url: name for name, url in reversed(out)}  # a URL keeps its first name
    return tuple((first[url], url) for url in dict.fromkeys(url for _, url in out))


# --------------------------------------------------------------------------- uv


def uv_binary(override: str | None = None) -> str:
    """The uv executable: the given one, the one shipped in the `uv` wheel, or uv on PATH.

    Raises LockError when there is none.
    """
    if override:
        return override
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise LockError("uv is not installed", hint="pip install uv (envbuilder depends on it)")


def uv_version(uv: str) -> str:
    """`uv 0.13.9` from `uv --version`. Raises LockError when uv does not run."""
    proc = _run([uv, "--version"], what="uv --version")
    words = proc.stdout.split()
    return " ".join(words[:2]) if len(words) >= 2 else proc.stdout.strip()


def _run(
    argv: list[str],
    *,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    secrets: Secrets = (),
) -> subprocess.CompletedProcess[str]:
    """Run uv (lifecycle.run_child: its process group ends with envbuilder's). Raises LockError
    with uv's last lines, every secret and credential taken out of them (redact)."""
    try:
        proc = run_child(argv, cwd=cwd, env=env)
    except OSError as exc:
        raise LockError(f"{what}: cannot run {argv[0]}: {exc.strerror}") from None
    if proc.returncode != 0:
        raise LockError(
            f"{what} failed", hint=_uv_hint(proc.stderr), log=log_tail([redact(proc.stderr, secrets)])
        )
    return proc


def uv_env(settings: LockSettings, work: Path) -> dict[str, str]:
    """uv's environment: ours, with the extra CA bundle appended to the trusted ones, and
    TMPDIR inside `work` (a lifecycle.temp_dir): whatever uv leaves when it is stopped goes
    with that folder, or with the next sweep after a SIGKILL."""
    env = dict(os.environ)
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp)
    if settings.ca_bundle is not None:
        bundle = work / "ca-bundle.pem"
        system = Path(env.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt")
        parts = [system.read_bytes()] if system.is_file() else []
        bundle.write_bytes(b"\n".join([*parts, settings.ca_bundle.read_bytes()]))
        env["SSL_CERT_FILE"] = str(bundle)
    return env


def _uv_hint(stderr: str) -> str:
    if (tls := tls_hint(stderr)) is not None:
        return tls
    if "dns error" in stderr or "Failed to fetch" in stderr or "connect" in stderr.lower():
        return "an index is unreachable: give a mirror (--index-url, --framework-index) or --find-links DIR"
    if "No solution found" in stderr or "unsatisfiable" in stderr:
        return "relax the requirement named above, or pin a version the framework's pins allow"
    return "see uv's message above"


# --------------------------------------------------------------------------- lock


def framework_requirements(stack: Stack) -> list[str]:
    """What the framework group installs: the stack's pins and its chosen companions."""
    return sorted({*stack.packages, *(req for _, req in stack.companions)})


def lock_packages(
    spec: ImageSpec,
    stack: Stack,
    *,
    platform: Platform = "x86_64",
    settings: LockSettings | None = None,
    on_progress: Callable[[str], None] | None = None,
    provided: tuple[LockedPackage, ...] | None = None,
) -> PackageLock:
    """Resolve every package of `spec` on `stack` for `platform`, pinned with hashes.

    `stack` is the rendered one (companions chosen). `provided`: the framework group as the base
    image holds it (group "base", drift.provided_by_base); then only the project's packages are
    resolved, against those versions, and uv is needed only when there are any. Raises LockError
    (no solution, an index unreachable, a package that is not a wheel from an index), SpecError
    (a refused input file).
    """
    settings = settings or LockSettings()
    say = on_progress or (lambda _msg: None)
    uv = uv_binary(settings.uv) if provided is None or spec.has_project_packages else None
    resolver = uv_version(uv) if uv is not None else BASE_RESOLVER
    base = _base_lock(spec, stack, platform, resolver, settings)
    secrets = lock_secrets(spec, settings)
    sweep_temp_dirs()  # what a SIGKILLed lock left (its uv cache among it)
    with scratch_dir("lock") as work:
        framework: list[LockedPackage]
        if provided is not None:
            say(f"the base environment provides {', '.join(p.pin for p in provided)}")
            framework = list(provided)
            base = replace(base, framework_index=None)
        else:
            assert uv is not None
            target = f"{stack.framework} {stack.version} for {platform}, Python {stack.python}"
            say(f"locking {target} ({resolver})")
            framework_in = work / "framework.in"
            framework_in.write_text(
                "".join(f"{r}\n" for r in framework_requirements(stack)), encoding="utf-8"
            )
            # The framework group comes from the framework's index alone (as `pip install
            # --index-url` does): PyPI's torch is another build of the same version number.
            framework = _compile(
                uv, base, [framework_in], work / "pylock.framework.toml", indexes=[],
                default=_framework_url(stack, settings) or _default_url(settings), settings=settings,
                group="framework", secrets=secrets,
            )  # fmt: skip
        f_url = None if provided is not None else _framework_url(stack, settings)
        f_indexes = [] if f_url is None else [("framework", f_url)]
        project: list[LockedPackage] = []
        inputs: list[tuple[str, str]] = []
        if spec.has_project_packages:
            assert uv is not None
            say("locking the project's packages (framework pins as constraints)")
            sources, extras, inputs = _project_inputs(uv, spec, work, settings)
            constraints = work / "constraints.txt"
            constraints.write_text("".join(f"{p.pin}\n" for p in framework), encoding="utf-8")
            p_indexes = [(i.name, i.url) for i in spec.indexes] + f_indexes
            resolved = _compile(
                uv, base, sources, work / "pylock.project.toml", indexes=p_indexes,
                default=_default_url(settings), settings=settings, group="project", secrets=secrets,
                constraints=constraints, extras=extras, strategy="unsafe-first-match" if p_indexes else None,
            )  # fmt: skip
            pinned = {p.name: p for p in framework}
            for pkg in resolved:
                if pkg.name not in pinned:
                    project.append(pkg)
                elif pinned[pkg.name].version != pkg.version:  # constraints forbid it; say so if not
                    raise LockError(f"{pkg.name} resolved to {pkg.version} against the framework's pin")
    packages = tuple(sorted(framework, key=lambda p: p.name)) + tuple(sorted(project, key=lambda p: p.name))
    return PackageLock(
        platform=base.platform,
        python=base.python,
        python_platform=base.python_platform,
        resolver=base.resolver,
        framework_index=base.framework_index,
        default_index=base.default_index,
        indexes=base.indexes,
        find_links=base.find_links,
        inputs=tuple(sorted(inputs)),
        packages=packages,
    )


def _framework_url(stack: Stack, settings: LockSettings) -> str | None:
    return None if settings.no_index else (settings.framework_index or stack.index_url)


def _default_url(settings: LockSettings) -> str | None:
    return None if settings.no_index else (settings.default_index or DEFAULT_INDEX)


def lock_secrets(spec: ImageSpec, settings: LockSettings) -> Secrets:
    """Every secret a lock's uv runs may meet, to take out of what they print: the settings'
    (a mirror given as a secret) and the spec's index passwords (UV_INDEX_<NAME>_PASSWORD)."""
    found = [(i.secret or i.name, os.environ.get(f"{i.env_prefix}_PASSWORD", "")) for i in spec.indexes]
    return (*settings.secrets, *((name, value) for name, value in found if value))


def _base_lock(
    spec: ImageSpec,
    stack: Stack,
    platform: Platform,
    resolver: str,
    settings: LockSettings,
) -> PackageLock:
    if platform not in PYTHON_PLATFORMS:
        raise LockError(f"unknown platform {platform!r}", hint=f"use one of {', '.join(PLATFORMS)}")
    for folder in settings.find_links:
        if not folder.is_dir():
            raise LockError(f"--find-links {folder}: not a folder")
    if settings.no_index and not settings.find_links:
        raise LockError("--no-index needs --find-links DIR (where else would packages come from?)")
    return PackageLock(
        platform=platform,
        python=stack.python,
        python_platform=PYTHON_PLATFORMS[platform],
        resolver=resolver,
        # A mirror given as a secret (the build's pip_index_url) is recorded as <secret:NAME>.
        framework_index=recorded_url(_framework_url(stack, settings), settings.secrets),
        default_index=recorded_url(_default_url(settings), settings.secrets),
        indexes=spec.indexes,
        find_links=tuple(str(p.resolve()) for p in settings.find_links),
    )


def _project_inputs(
    uv: str, spec: ImageSpec, work: Path, settings: LockSettings
) -> tuple[list[Path], tuple[str, ...], list[tuple[str, str]]]:
    """uv's source files for the project group, the extras asked for, and the (file, sha256) of
    each input read (so a later build can tell that requirements.txt changed since the lock)."""
    base = Path(spec.base_dir)
    sources: list[Path] = []
    read: list[Path] = []
    extras: tuple[str, ...] = ()
    if spec.requirements:
        listed = work / "requirements.in"
        listed.write_text("".join(f"{r}\n" for r in spec.requirements), encoding="utf-8")
        sources.append(listed)
    if spec.requirements_file:
        path = spec_file(base, spec.requirements_file, "requirements", spec.path)
        read += requirement_files(path, root=base, where=spec.path)
        sources.append(path)
    if spec.pyproject:
        path = spec_file(base, spec.pyproject.path, "pyproject", spec.path)
        read.append(path)
        sources.append(path)
        extras = spec.pyproject.extras
    if spec.uv_lock:
        path = spec_file(base, spec.uv_lock.path, "uv_lock", spec.path)
        project_dir = path.parent
        if not (project_dir / "pyproject.toml").is_file():
            raise SpecError(
                f"{spec.path}: field 'uv_lock': no pyproject.toml beside {path}",
                hint="uv.lock belongs to a project: keep its pyproject.toml next to it",
            )
        read += [path, project_dir / "pyproject.toml"]
        exported = work / "uv-lock.txt"
        argv = [uv, "export", "--frozen", "--no-hashes", "--no-emit-project", "--no-dev", "--no-header"]
        argv += [f"--extra={e}" for e in spec.uv_lock.extras]
        argv += ["--format", "requirements-txt", "--output-file", str(exported), "--no-config"]
        argv += ["--cache-dir", str(work / "uv-cache")]
        _run(argv, what=f"uv export of {path}", cwd=project_dir, env=uv_env(settings, work))
        sources.append(exported)
        extras = ()
    digests = {_under_spec(p, base): sha256_file_hex(p) for p in dict.fromkeys(read)}  # each file hashed once
    return sources, extras, list(digests.items())


def _under_spec(path: Path, base: Path) -> str:
    """`path` relative to the spec's folder `base`, as changed_inputs reads it back (`base / it`):
    a file the spec names (`base / rel`, as written) against `base` as written, a file
    requirement_files found (resolved) against `base` resolved. One resolved side alone gave
    `../link/pyproject.toml` for a spec whose folder was named through a symlink (/home linked
    to /mnt/home, say), and the lock's reader refuses a path that climbs out."""
    here = base.absolute()
    if path.absolute().is_relative_to(here):
        return os.path.relpath(path, here)
    return os.path.relpath(path, base.resolve())


def _compile(
    uv: str,
    base: PackageLock,
    sources: list[Path],
    out: Path,
    *,
    indexes: list[tuple[str, str]],
    default: str | None,
    settings: LockSettings,
    group: Group,
    constraints: Path | None = None,
    extras: tuple[str, ...] = (),
    strategy: str | None = None,
    secrets: Secrets = (),
) -> list[LockedPackage]:
    argv = [uv, "pip", "compile", *map(str, sources), "--format", "pylock.toml", "-o", str(out)]
    argv += ["--python-version", base.python, "--python-platform", base.python_platform]
    # A cache of its own inside the lock's temp folder, removed with it (and swept after a
    # SIGKILL): uv unpacks each find-links wheel into its cache to hash it (747 MB for torch CPU)
    # and keys it by the file's ctime, which every build from that wheelhouse bumps (its context
    # hard-links the wheels): a kept cache re-unpacks after each build and keeps the old copy,
    # while a warm hit saves seconds only (benchmarks/results/installer-2026-12-01.md). Not
    # --no-cache: uv puts that one in TMPDIR and leaves it there when it is stopped (D8).
    argv += ["--only-binary", ":all:", "--no-config", "--no-header", "--quiet"]
    argv += ["--cache-dir", str(out.parent / "uv-cache")]
    for name, url in indexes:
        argv += ["--index", f"{name}={url}"]
    if default is not None:
        argv += ["--default-index", default]
    if settings.no_index:
        argv.append("--no-index")
    for folder in settings.find_links:
        argv += ["--find-links", str(folder.resolve())]
    if constraints is not None:
        argv += ["--constraints", str(constraints)]
    argv += [f"--extra={e}" for e in extras]
    if strategy:
        argv += ["--index-strategy", strategy]
    _run(argv, what=f"uv pip compile ({group} packages)", env=uv_env(settings, out.parent), secrets=secrets)
    return parse_pylock(
        out.read_text(encoding="utf-8"),
        group,
        where=f"uv's {group} lock",
        python=base.python,
        python_platform=base.python_platform,
        secrets=secrets,
    )


def parse_pylock(
    text: str, group: Group, *, where: str, python: str, python_platform: str, secrets: Secrets = ()
) -> list[LockedPackage]:
    """The packages of a pylock.toml (PEP 751) that uv wrote for one target: each must come from
    an index or find-links as a wheel; where several fit, the one the installer would pick is
    kept (choose_wheel), with its one sha256; its URLs without secrets (redact). Raises LockError."""
    try:
        doc = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError; an integer past Python's digit
        # limit (a plain ValueError); arrays or tables nested past the interpreter's stack
        raise LockError(f"{where}: not valid TOML ({str(exc)[:200]})") from None
    bad = _pylock_shape(doc)
    if bad:
        raise LockError(f"{where}: not a pylock.toml as uv writes it: {bad}")
    out: list[LockedPackage] = []
    for entry in doc.get("packages", []):
        name = canonicalize_name(str(entry.get("name", "")))
        wheels = entry.get("wheels") or []
        if not wheels:
            kind = next((k for k in ("sdist", "directory", "archive", "vcs") if k in entry), "no wheel")
            raise LockError(
                f"{where}: {name} {entry.get('version', '')} is not locked to a wheel ({kind})",
                hint="envbuilder locks wheels from an index only: pin a version that has a wheel "
                "for this Python and platform, or copy your own code in with `context:`",
            )
        by_file: dict[str, list[dict[str, Any]]] = {}
        for w in wheels:
            by_file.setdefault(urllib.parse.unquote(str(w.get("url", "")).rsplit("/", 1)[-1]), []).append(w)
        wheel = choose_wheel(sorted(by_file), python, python_platform, where=f"{where}: {name}")
        chosen = by_file[wheel]
        digests = {str((w.get("hashes") or {}).get("sha256", "")) for w in chosen}
        if len(digests) != 1:
            raise LockError(f"{where}: {wheel} is served with {len(digests)} different sha256 digests")
        sizes = {w["size"] for w in chosen if isinstance(w.get("size"), int)}
        if len(sizes) > 1:  # one file (one sha256) has one size: a mirror that says otherwise is wrong
            raise LockError(
                f"{where}: {wheel} is served with {len(sizes)} different sizes "
                f"({', '.join(str(n) for n in sorted(sizes))} bytes) under one sha256",
                hint="an index or find-links folder reports a wrong size for this file: fix or drop it",
            )
        out.append(
            check_package(
                {
                    "name": name,
                    "version": str(entry.get("version", "")),
                    "wheel": wheel,
                    "sha256": digests.pop(),
                    "size": sizes.pop() if sizes else None,
                    "urls": [redact(str(w.get("url", "")), secrets) for w in chosen],
                    "group": group,
                },
                where,
            )
        )
    return out


def _pylock_shape(doc: dict[str, Any]) -> str:
    """What of a parsed pylock.toml is not of the type parse_pylock reads ("" when all is): the
    packages an array of tables, each one's name and version strings, its wheels an array of
    tables, each wheel's url a string, its hashes a table of strings, its size a number of bytes.
    A file uv did not write that way (damaged, edited) is refused by name, not a traceback."""
    packages = doc.get("packages", [])
    if not isinstance(packages, list):
        return "packages is not an array of tables"
    for i, entry in enumerate(packages):
        at = f"packages[{i}]"
        if not isinstance(entry, dict):
            return f"{at} is not a table"
        for key in ("name", "version"):
            if not isinstance(entry.get(key, ""), str):
                return f"{at}.{key} is not a string"
        wheels = entry.get("wheels", [])
        if not isinstance(wheels, list):
            return f"{at}.wheels is not an array of tables"
        for j, w in enumerate(wheels):
            if not isinstance(w, dict):
                return f"{at}.wheels[{j}] is not a table"
            hashes, size = w.get("hashes", {}), w.get("size", 0)
            if not isinstance(w.get("url", ""), str):
                return f"{at}.wheels[{j}].url is not a string"
            if not isinstance(hashes, dict) or not all(isinstance(v, str) for v in hashes.values()):
                return f"{at}.wheels[{j}].hashes is not a table of strings"
            if type(size) is not int or size < 0:
                return f"{at}.wheels[{j}].size is not a number of bytes"
    return ""


def target_tags(python: str, python_platform: str) -> list[Tag]:
    """The wheel tags an installer on the target accepts, most preferred first (packaging's
    own order): CPython X.Y on manylinux_2_N (N down from the target's) and its legacy aliases."""
    arch, _, policy = python_platform.partition("-")
    newest = int(policy.rsplit("_", 1)[-1]) if policy.startswith("manylinux_2_") else 17
    platforms = [f"manylinux_2_{n}_{arch}" for n in range(newest, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    platforms += [f"{legacy[n]}_{arch}" for n in (17, 12, 5) if n <= newest]
    platforms.append(f"linux_{arch}")
    version = tuple(int(x) for x in python.split("."))
    return [
        *tags.cpython_tags(version, platforms=platforms),
        *tags.compatible_tags(version, interpreter=f"cp{''.join(python.split('.'))}", platforms=platforms),
    ]


def choose_wheel(files: list[str], python: str, python_platform: str, *, where: str) -> str:
    """The file an installer on the target picks among a version's wheels (uv's pylock lists
    every compatible one, e.g. an abi3 build and a pure-Python one): the best-ranked tag wins,
    so the lock holds that one file and its sha256. Raises LockError when none fits."""
    if len(files) == 1:
        return files[0]
    rank = {t: i for i, t in enumerate(target_tags(python, python_platform))}
    best: tuple[int, str] | None = None
    for name in files:
        try:
            wheel_tags = parse_wheel_filename(name)[3]
        except InvalidWheelFilename:
            continue
        score = min((rank[t] for t in wheel_tags if t in rank), default=None)
        if score is not None and (best is None or (score, name) < best):
            best = (score, name)
    if best is None:
        raise LockError(f"{where}: none of {', '.join(files)} installs on {python_platform}, Python {python}")
    return best[1]


def _refused(where: str, field: str, value: object, why: str) -> LockError:
    """The one error a refused lock value gives: the field, the value (repr, cut short) and why."""
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return LockError(f"{where}: field {field!r}: {text} refused ({why})", hint=_HINT)


def _one_line(value: object, limit: int = 400) -> bool:
    """Printable text on one line (no control character, no newline), at most `limit` characters."""
    return isinstance(value, str) and 0 < len(value) <= limit and value.isprintable()


def check_package(raw: Mapping[str, Any], where: str) -> LockedPackage:
    """One package entry of a lock, every value checked (it reaches the build: the requirements
    file the installer reads, the wheelhouse's file names). Raises LockError."""

    def bad(key: str, why: str) -> LockError:
        return _refused(where, f"packages.{key}", raw.get(key), why)

    name, version, wheel = raw.get("name"), raw.get("version"), raw.get("wheel")
    group = raw.get("group")
    if group not in ("framework", "project", "base"):
        raise bad("group", "one of framework, project, base")
    from_base = group == "base"
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise bad("name", "a canonical package name (PEP 503)")
    if not isinstance(version, str) or not VERSION_RE.fullmatch(version):
        raise bad("version", "a PEP 440 version")
    if not isinstance(wheel, str) or not (wheel == "" if from_base else _is_wheel_file(wheel)):
        raise bad("wheel", "a wheel file name (NAME-VERSION-TAGS.whl)")
    sha = raw.get("sha256")
    if not isinstance(sha, str) or not (SHA256_RE.fullmatch(sha) or (from_base and sha == "")):
        raise bad("sha256", "64 lower-case hex digits")
    size = raw.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise bad("size", "a number of bytes")
    urls = raw.get("urls", [])
    if not isinstance(urls, list) or not all(isinstance(u, str) and URL_RE.fullmatch(u) for u in urls):
        raise bad("urls", "a list of https://, http:// or file:// URLs, one line each")
    try:
        Requirement(f"{name}=={version}")
    except InvalidRequirement:
        raise bad("version", "a PEP 440 version") from None
    return LockedPackage(
        name=name,
        version=version,
        wheel=wheel,
        sha256=sha,
        size=size,
        urls=tuple(urls),
        group=group,
    )


def _is_wheel_file(name: str) -> bool:
    if not WHEEL_RE.fullmatch(name):
        return False
    try:
        parse_wheel_filename(name)
    except InvalidWheelFilename:
        return False
    return True


def _index_url(where: str, field: str, value: object, *, secret_ref: bool) -> str:
    """An index URL of a lock: https:// (loopback http://) without credentials or query, the
    spec's own rule (sources.INDEX_URL_RE); `secret_ref`: or `<secret:NAME>`."""
    if isinstance(value, str) and (INDEX_URL_RE.fullmatch(value) or (secret_ref and is_secret_ref(value))):
        return value
    allowed = " or <secret:NAME>" if secret_ref else ""
    raise _refused(where, field, value, f"an https:// index URL without credentials or query{allowed}")


def _lock_indexes(where: str, raw: object) -> tuple[PackageIndex, ...]:
    """The spec's indexes as the lock records them, checked as the spec's are (spec._indexes)."""
    if not isinstance(raw, list):
        raise _refused(where, "indexes", raw, "a list of {name, url}")
    out: list[PackageIndex] = []
    for i, item in enumerate(raw):
        field = f"indexes[{i}]"
        if not isinstance(item, dict) or not set(item) <= {"name", "url", "username", "secret"}:
            raise _refused(where, field, item, "an object with name, url, username, secret")
        name, username, secret = item.get("name"), item.get("username"), item.get("secret")
        if not isinstance(name, str) or not INDEX_NAME_RE.fullmatch(name) or name in ("framework", "pypi"):
            raise _refused(where, f"{field}.name", name, "a lower-case index name, not framework or pypi")
        url = _index_url(where, f"{field}.url", item.get("url"), secret_ref=False)
        if username is not None and (not isinstance(username, str) or not USERNAME_RE.fullmatch(username)):
            raise _refused(where, f"{field}.username", username, "a user name, e.g. __token__")
        if secret is not None and (not isinstance(secret, str) or not SECRET_ID_RE.fullmatch(secret)):
            raise _refused(where, f"{field}.secret", secret, "a BuildKit secret id")
        out.append(PackageIndex(name=name, url=url, username=username, secret=secret))
    names = [i.name for i in out]
    if len(set(names)) != len(names):
        raise _refused(where, "indexes", names, "each index name once")
    return tuple(out)


def package_lock_from_dict(raw: object, where: str) -> PackageLock:
    """Inverse of PackageLock.to_dict. Every value is checked as the spec's are, since a lock is
    user-editable input and its strings reach the Dockerfile, the installer's requirements file
    and uv's command line: index names and URLs, package names, versions, wheel files, digests,
    groups, find-links, Python and platform. Raises LockError naming the field and the value."""
    if not isinstance(raw, dict):
        raise LockError(f"{where}: expected an object", hint=_HINT)

    def text(key: str, pattern: re.Pattern[str], why: str) -> str:
        value = raw.get(key)
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise _refused(where, key, value, why)
        return str(value)

    def index(key: str) -> str | None:
        value = raw.get(key)
        return None if value is None else _index_url(where, key, value, secret_ref=True)

    platform = raw.get("platform")
    if platform not in PLATFORMS:
        raise _refused(where, "platform", platform, f"one of {', '.join(PLATFORMS)}")
    python = text("python", PYTHON_RE, "a Python version X.Y")
    python_platform = text("python_platform", PYTHON_PLATFORM_RE, "ARCH-manylinux_2_N")
    if not python_platform.startswith(f"{platform}-"):
        raise _refused(where, "python_platform", python_platform, f"a target for {platform}")
    resolver = raw.get("resolver")
    if resolver != BASE_RESOLVER:
        resolver = text("resolver", RESOLVER_RE, f"`uv VERSION` or {BASE_RESOLVER!r}")
    find_links = raw.get("find_links", [])
    if not isinstance(find_links, list) or not all(
        _one_line(f, 4096) and str(f).startswith("/") for f in find_links
    ):
        raise _refused(where, "find_links", find_links, "a list of absolute folder paths, one line each")
    inputs = raw.get("inputs", {})
    if not isinstance(inputs, dict):
        raise _refused(where, "inputs", inputs, "an object: file -> sha256")
    for rel, digest in inputs.items():
        if not REL_PATH_RE.fullmatch(rel) or ".." in rel.split("/"):
            raise _refused(where, "inputs", rel, "a path relative to the spec's folder")
        if not isinstance(digest, str) or not SHA256_RE.fullmatch(digest):
            raise _refused(where, f"inputs[{rel!r}]", digest, "64 lower-case hex digits")
    packages = raw.get("packages")
    if not isinstance(packages, list):
        raise _refused(where, "packages", packages, "a list of packages")
    return PackageLock(
        platform=platform,
        python=python,
        python_platform=python_platform,
        resolver=str(resolver),
        framework_index=index("framework_index"),
        default_index=index("default_index"),
        indexes=_lock_indexes(where, raw.get("indexes", [])),
        find_links=tuple(find_links),
        inputs=tuple(sorted(inputs.items())),
        packages=tuple(check_package(p if isinstance(p, dict) else {}, where) for p in packages),
    )


def changed_inputs(lock: PackageLock, spec: ImageSpec) -> list[str]:
    """The input files whose content differs from what the lock read (or that are gone)."""
    base = Path(spec.base_dir)
    out = []
    for rel, digest in lock.inputs:
        path = base / rel
        if not path.is_file() or sha256_file_hex(path) != digest:
            out.append(rel)
    return out
