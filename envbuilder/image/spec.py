"""Image specs (images/NAME.yaml): load, validate every user value, and expose a typed ImageSpec.

Nothing a user wrote reaches a template before passing a strict check here; a refused value
raises SpecError naming the file, the field and the value, with a hint. Values are never escaped.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder.bounded import Refused, load_yaml, read_text_bounded, yaml_error_message
from envbuilder.errors import SpecError
from envbuilder.image.sources import (
    EXTRA_RE,
    INDEX_NAME_RE,
    INDEX_URL_RE,
    REL_PATH_RE,
    SECRET_ID_RE,
    URL_PATH,
    USERNAME_RE,
    PackageIndex,
    ProjectFile,
    spec_file,
)
from envbuilder.matrix.model import Strategy
from envbuilder.resolve.model import Request
from envbuilder.versions import MAX_REQUIREMENT

SpecFlavor = Literal["runtime", "devel"]
CertifyLevel = Literal["quick", "default"]
Installer = Literal["uv", "pip"]

SCHEMA_VERSION = 1
MAX_ITEMS = 200

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
PYTHON_RE = re.compile(r"^3\.[0-9]{1,2}$")  # [0-9]: \d also takes full-width digits
# Debian policy names (lower case, >= 2 chars) and an optional `=version` pin.
APT_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]{1,62}(=[0-9][A-Za-z0-9.+~:-]{0,127})?$")
ENV_KEY_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
# Printable ASCII without `"`, `\`, `$` and backtick: safe inside a double-quoted ENV value.
ENV_VALUE_RE = re.compile(r"^[\x20-\x21\x23\x25-\x5b\x5d-\x5f\x61-\x7e]{0,4096}$")
MAX_DESCRIPTION = 1000
MAX_ARGV = 64
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
WORKDIR_RE = re.compile(r"^(/[A-Za-z0-9._-]+)+$|^/$")
THRESHOLD_KEY_RE = re.compile(r"^[a-z][a-z0-9_.]{0,63}$")
SOURCE_RE = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?" + URL_PATH + "$")
# Requirement head (name, extras, specifiers): no spaces, quotes or shell metacharacters.
_REQ_HEAD_RE = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?([<>=!~][<>=!~A-Za-z0-9.*+,_-]*)?$"
)
# Marker (after `;`): identifiers, operators, quoted constants, parentheses, single spaces.
_REQ_MARKER_RE = re.compile(r"^[A-Za-z0-9_.<>=!~()'\" -]+$")
_FORBIDDEN = ("\\", "$", "`", "&", "|", "#", "@", "/", ":", "\t", "\n", "\r", "\x00")
RESERVED_ENV = frozenset(
    {
        "PATH",
        "VIRTUAL_ENV",
        "LD_LIBRARY_PATH",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "NVIDIA_REQUIRE_CUDA",
    }
)
RESERVED_ENV_PREFIX = "NVIDIA_"
TOP_KEYS = frozenset(
    {
        *("schema_version", "name", "description", "source", "framework", "python", "strategy"),
        *("flavor", "companions", "requirements", "apt", "env", "user", "workdir", "certify"),
        *("pyproject", "uv_lock", "indexes", "context", "cmd", "entrypoint", "installer"),
        "forward_compat",
    }
)


# The project's own smoke command (certify.smoke): seconds it may run before it is killed.
SMOKE_TIMEOUT_S = 300
SMOKE_TIMEOUT_MAX_S = 1800  # the full harness's own limit (certify/harness_plan.py TIMEOUT_S)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectSmoke:
    """The project's own smoke command (exec form), run by `certify` in the image as its user, in
    its workdir, after the harness: its exit code decides the `project_smoke` step."""

    command: tuple[str, ...]
    timeout_s: int = SMOKE_TIMEOUT_S

    def to_dict(self) -> dict[str, Any]:
        return {"command": list(self.command), "timeout_s": self.timeout_s}


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifySettings:
    """How `certify` treats this image: quick (smoke test) or default, threshold overrides, and
    the project's own smoke command."""

    level: CertifyLevel = "default"
    thresholds: tuple[tuple[str, float], ...] = ()
    smoke: ProjectSmoke | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "thresholds": dict(self.thresholds)}
        if self.smoke is not None:  # only when set: the specs of earlier releases keep their hash
            out["smoke"] = self.smoke.to_dict()
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSpec:
    """One validated image spec. Lists are sorted and de-duplicated (deterministic renders)."""

    path: str  # where it was read from (messages only; not part of to_dict)
    name: str
    description: str
    source: str | None
    framework: str  # canonical project name, e.g. "torch"
    specifier: str  # PEP 440 specifier set, "" = any
    python: str | None
    strategy: Strategy | None
    flavor: SpecFlavor
    companions: tuple[str, ...]
    requirements: tuple[str, ...]  # canonical PEP 508 strings (the list form)
    apt: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    user: str
    uid: int
    workdir: str
    certify: CertifySettings
    requirements_file: str | None = None  # `requirements: FILE` (pip's format), beside the spec
    pyproject: ProjectFile | None = None
    uv_lock: ProjectFile | None = None
    indexes: tuple[PackageIndex, ...] = ()
    context: str | None = None  # the project folder copied into workdir (.dockerignore honoured)
    cmd: tuple[str, ...] | None = None
    entrypoint: tuple[str, ...] | None = None
    installer: Installer = "uv"
    # allow CUDA forward compatibility (cuda-compat) on data-center GPUs (resolve --forward-compat)
    forward_compat: bool = False
    base_dir: str = "."  # the spec's folder: relative paths start here (not part of to_dict)

    @property
    def has_project_packages(self) -> bool:
        """Whether anything beyond the framework and its companions is asked for."""
        return bool(self.requirements or self.requirements_file or self.pyproject or self.uv_lock)

    def to_dict(self) -> dict[str, Any]:
        """Canonical form: what the lock hash covers (everything that changes the image).

        parse_spec reads it back (a lock file embeds it); optional fields appear only when set,
        so the specs of earlier releases keep their hash.
        """
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "framework": f"{self.framework}{self.specifier}",
            "python": self.python,
            "strategy": self.strategy,
            "flavor": self.flavor,
            "companions": list(self.companions),
            "requirements": self.requirements_file or list(self.requirements),
            "apt": list(self.apt),
            "env": dict(self.env),
            "user": {"name": self.user, "uid": self.uid},
            "workdir": self.workdir,
            "certify": self.certify.to_dict(),
        }
        optional: dict[str, Any] = {
            "pyproject": self.pyproject.to_dict() if self.pyproject else None,
            "uv_lock": self.uv_lock.to_dict() if self.uv_lock else None,
            "indexes": [i.to_dict() for i in self.indexes] or None,
            "context": self.context,
            "cmd": list(self.cmd) if self.cmd is not None else None,
            "entrypoint": list(self.entrypoint) if self.entrypoint is not None else None,
            "installer": self.installer if self.installer != "uv" else None,
            "forward_compat": True if self.forward_compat else None,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return out

    def to_request(self, *, cpu_only: bool = False) -> Request:
        """The resolver request this spec asks for."""
        return Request(
            framework=self.framework,
            specifier=self.specifier,
            python=self.python,
            strategy=self.strategy,
            flavor=self.flavor,
            cpu_only=cpu_only,
            forward_compat=self.forward_compat,
        )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Checker:
    """Raises SpecError with the file, field and value in every message."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, field: str, value: object, why: str, hint: str | None = None) -> SpecError:
        return SpecError(
            f"{self.path}: field {field!r}: value {_short(value)} refused: {why}",
            hint,
            file=self.path,
            field=field,
            value=value,
        )

    def string(self, field: str, value: object) -> str:
        if not isinstance(value, str):
            raise self.fail(
                field, value, f"expected a string, got {type(value).__name__}", "quote the value in YAML"
            )
        return value

    def pattern(self, field: str, value: object, regex: re.Pattern[str], hint: str) -> str:
        text = self.string(field, value)
        if not regex.fullmatch(text):
            raise self.fail(field, text, f"does not match {regex.pattern}", hint)
        return text

    def str_list(self, field: str, value: object) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(field, value, "expected a list", f"write {field} as a YAML list")
        if len(value) > MAX_ITEMS:
            raise self.fail(field, f"{len(value)} items", f"more than {MAX_ITEMS} items")
        return [self.string(f"{field}[{i}]", v) for i, v in enumerate(value)]

    def mapping(self, field: str, value: object) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(field, value, "expected a mapping", f"write {field} as KEY: VALUE lines")
        return cast(dict[str, Any], value)


def _squeeze(text: str) -> str:
    return text.replace(" ", "").replace("'", '"')


def validate_requirement(check: _Checker, field: str, value: object) -> Requirement:
    """One PEP 508 requirement: name[extras]specifiers[; marker]. Raises SpecError.

    URLs, paths, options and shell metacharacters are refused; a marker is allowed only when it
    survives a strict round trip through packaging (nothing dropped, added or reinterpreted).
    """
    text = check.string(field, value)
    hint = "write a PEP 508 requirement such as 'pillow>=10' or 'numpy==2.1.*' (no URLs or paths)"
    if not text or len(text) > MAX_REQUIREMENT or not text.isascii() or not text.isprintable():
        raise check.fail(field, text, "empty, too long, or not printable ASCII", hint)
    bad = [c for c in _FORBIDDEN if c in text]
    if bad:
        raise check.fail(field, text, f"contains {bad[0]!r}", hint)
    head, sep, marker = text.partition(";")
    if not _REQ_HEAD_RE.fullmatch(head.strip()) or head.strip() != head.rstrip():
        raise check.fail(field, text, "not NAME[extras]SPECIFIERS", hint)
    if sep and (not marker.strip() or ";" in marker or not _REQ_MARKER_RE.fullmatch(marker)):
        raise check.fail(field, text, "malformed environment marker", hint)
    if "  " in text:
        raise check.fail(field, text, "repeated spaces", hint)
    try:
        req = Requirement(text)
        canonical = str(req)
        again = str(Requirement(canonical))
    except InvalidRequirement as exc:
        # packaging's message is three lines (the text again, a caret under the error): its first
        why = str(exc).splitlines()[0] if str(exc) else "unreadable"
        raise check.fail(field, text, f"not a PEP 508 requirement ({why})", hint) from None
    if req.url:
        raise check.fail(field, text, "direct URL references are refused", hint)
    if again != canonical or Counter(_squeeze(text)) != Counter(_squeeze(canonical)):
        raise check.fail(field, text, f"does not round-trip through packaging ({canonical!r})", hint)
    return req


MAX_REL_PATH, MAX_NAME = 1024, 255  # Linux's NAME_MAX; stat() of a longer name is an OSError
SPEC_MAX_BYTES = 256 * 1024  # a spec is a short file: anything bigger is a mistake or an attack


def load_spec(path: Path) -> ImageSpec:
    """Read and validate images/NAME.yaml; its relative paths start at its folder. Raises
    SpecError (missing file, not a regular file, bad YAML, bad value, a referenced file that is not
    there). Reads at most SPEC_MAX_BYTES + 1 bytes; a FIFO or a device is refused unread."""
    try:
        text = read_text_bounded(path, SPEC_MAX_BYTES)
        raw = load_yaml(text, max_bytes=SPEC_MAX_BYTES)
    except Refused as exc:
        raise SpecError(
            f"{path}: refused: the spec is {exc}", "an image spec is a short YAML file", file=str(path)
        ) from None
    except OSError as exc:
        raise SpecError(
            f"{path}: cannot read image spec: {exc.strerror}",
            "give the path of an images/NAME.yaml file",
            file=str(path),
        ) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"{path}: not a text file (byte {exc.start} is not UTF-8)",
            "an image spec is a YAML text file",
            file=str(path),
        ) from None
    except yaml.YAMLError as exc:
        raise SpecError(
            f"{path}: not valid YAML: {yaml_error_message(exc)}",
            "check the indentation and quoting",
            file=str(path),
        ) from None
    lines = _top_key_lines(text) if isinstance(raw, dict) and any(k not in TOP_KEYS for k in raw) else None
    spec = parse_spec(raw, str(path), base_dir=path.parent, key_lines=lines)
    check_spec_files(spec)
    return spec


def _kind(value: object) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )


def _unknown_field(path: str, key: object, index: int, key_lines: Mapping[object, int] | None) -> SpecError:
    """An unknown top-level field, named by its line (or position), not by its text."""
    line = (key_lines or {}).get(key)
    where = f"line {line}" if line else f"top-level field {index + 1}"
    close = difflib.get_close_matches(str(key), sorted(TOP_KEYS), n=1) if isinstance(key, str) else []
    guess = f"did you mean {close[0]!r}? " if close else ""
    return SpecError(
        f"{path}: {where}: unknown field",
        f"{guess}known fields: {', '.join(sorted(TOP_KEYS))}",
        file=path,
    )


def _top_key_lines(text: str) -> dict[object, int]:
    """The line of each top-level key of a YAML mapping (1-based), for errors that must not quote
    the key. The document was already parsed within bounded's limits."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        return {}
    loader = yaml.SafeLoader("")
    try:
        return {loader.construct_object(k): k.start_mark.line + 1 for k, _ in node.value}
    except (yaml.YAMLError, TypeError):  # an unhashable key: positions are enough
        return {}
    finally:
        loader.dispose()


def check_spec_files(spec: ImageSpec) -> None:
    """The files and folder a spec names exist beside it. Raises SpecError naming the field."""
    base = Path(spec.base_dir)
    named = [
        ("requirements", spec.requirements_file),
        ("pyproject", spec.pyproject.path if spec.pyproject else None),
        ("uv_lock", spec.uv_lock.path if spec.uv_lock else None),
    ]
    for field, rel in named:
        if rel is not None:
            spec_file(base, rel, field, spec.path)
    if spec.context is not None and not (base / spec.context).is_dir():
        raise SpecError(
            f"{spec.path}: field 'context': {spec.context!r} is not a folder (looked in {base})",
            hint="context is the project folder to copy into the image, relative to the spec",
        )


def parse_spec(
    raw: object,
    path: str = "<spec>",
    *,
    base_dir: Path | None = None,
    key_lines: Mapping[object, int] | None = None,
) -> ImageSpec:
    """Validate an already-parsed spec mapping. Raises SpecError naming field and value.

    Until every top-level key is a spec field the document may be anything (a secret file a
    spec path points at): then errors name only its kind, a line (`key_lines`: the line of each
    top-level key) or position, never its text. A spec's own field values are quoted.

    `base_dir` is where relative paths (requirements file, pyproject, uv_lock, context) start;
    by default the folder of `path`.
    """
    check = _Checker(path)
    if raw is not None and not isinstance(raw, dict):
        # Nothing of a document that is not a spec is quoted (a spec path that is a symlink to a
        # secret file would print the secret): its kind only.
        raise SpecError(
            f"{path}: not an image spec: the file holds a YAML {_kind(raw)}, not a mapping of fields",
            "an image spec is YAML `field: value` lines (images/README.md)",
            file=path,
        )
    data = check.mapping("<top>", raw)
    for index, key in enumerate(data):
        if key not in TOP_KEYS:
            raise _unknown_field(path, key, index, key_lines)
    if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise check.fail(
            "schema_version",
            data.get("schema_version"),
            "unsupported",
            f"this envbuilder reads schema_version {SCHEMA_VERSION}",
        )
    name = check.pattern(
        "name",
        data.get("name"),
        NAME_RE,
        "lower-case letters, digits, '.', '_' and '-' (a Docker repository name)",
    )
    description = _text(check, "description", data.get("description", ""))
    source = data.get("source")
    if source is not None:
        source = check.pattern("source", source, SOURCE_RE, "an https:// URL without query")
    framework, specifier = _framework(check, data.get("framework"))
    python = data.get("python")
    if python is not None:
        python = check.pattern("python", python, PYTHON_RE, "a quoted CPython X.Y such as '3.12'")
    strategy = data.get("strategy")
    if strategy not in (None, "bundled", "system-cuda"):
        raise check.fail("strategy", strategy, "unknown strategy", "use bundled or system-cuda")
    flavor = data.get("flavor", "runtime")
    if flavor not in ("runtime", "devel"):
        raise check.fail("flavor", flavor, "unknown flavor", "use runtime or devel")
    if flavor == "devel" and strategy != "system-cuda":
        raise check.fail(
            "flavor",
            flavor,
            "devel needs strategy system-cuda",
            "add `strategy: system-cuda` (the devel flavor is an nvidia/cuda devel image)",
        )
    companions = _companions(check, data.get("companions"))
    raw_requirements = data.get("requirements")
    requirements_file = None
    if isinstance(raw_requirements, str):
        requirements_file = _rel_path(check, "requirements", raw_requirements)
        raw_requirements = None
    requirements = _requirements(check, raw_requirements, {framework, *companions})
    pyproject = _project_file(check, "pyproject", data.get("pyproject"))
    uv_lock = _project_file(check, "uv_lock", data.get("uv_lock"))
    if pyproject and uv_lock:
        raise check.fail(
            "uv_lock",
            uv_lock.path,
            "give pyproject or uv_lock, not both",
            "a uv.lock already holds its pyproject's dependencies",
        )
    context = data.get("context")
    if context is not None:
        context = _rel_path(check, "context", context)
    installer = data.get("installer", "uv")
    if installer not in ("uv", "pip"):
        raise check.fail("installer", installer, "unknown installer", "use uv (the default) or pip")
    forward_compat = data.get("forward_compat", False)
    if not isinstance(forward_compat, bool):
        raise check.fail(
            "forward_compat",
            forward_compat,
            "not true or false",
            "write forward_compat: true (data-center GPUs)",
        )
    apt = sorted(set(_apt(check, data.get("apt"))))
    env = _env(check, data.get("env"))
    user, uid = _user(check, data.get("user"))
    workdir = check.pattern(
        "workdir",
        data.get("workdir", "/workspace"),
        WORKDIR_RE,
        "an absolute path of letters, digits, '.', '_' and '-'",
    )
    if ".." in workdir.split("/"):
        raise check.fail("workdir", workdir, "'..' is refused", "write the path without '..'")
    return ImageSpec(
        path=path,
        name=name,
        description=description,
        source=source,
        framework=framework,
        specifier=specifier,
        python=python,
        strategy=cast("Strategy | None", strategy),
        flavor=cast(SpecFlavor, flavor),
        companions=companions,
        requirements=tuple(requirements),
        apt=tuple(apt),
        env=env,
        user=user,
        uid=uid,
        workdir=workdir,
        certify=_certify(check, data.get("certify")),
        requirements_file=requirements_file,
        pyproject=pyproject,
        uv_lock=uv_lock,
        indexes=_indexes(check, data.get("indexes")),
        context=context,
        cmd=_argv(check, "cmd", data.get("cmd")),
        entrypoint=_argv(check, "entrypoint", data.get("entrypoint")),
        installer=cast(Installer, installer),
        forward_compat=forward_compat,
        base_dir=str(base_dir if base_dir is not None else Path(path).parent),
    )


def _text(check: _Checker, field: str, value: object, limit: int = MAX_DESCRIPTION) -> str:
    """Free text: any printable Unicode on one line (quoted by render, never refused for a quote)."""
    text = check.string(field, value)
    if len(text) > limit or not text.isprintable():
        raise check.fail(
            field,
            text,
            f"not one line of printable text of at most {limit} characters",
            "write one line; newlines, tabs and control characters are refused",
        )
    return text


def _rel_path(check: _Checker, field: str, value: object) -> str:
    text = check.string(field, value)
    hint = "a path relative to the spec's folder, e.g. requirements.txt or . (no '..', not absolute)"
    if text == ".":
        return text
    if not REL_PATH_RE.fullmatch(text) or ".." in text.split("/"):
        raise check.fail(field, text, "not a plain relative path", hint)
    if len(text) > MAX_REL_PATH or any(len(part) > MAX_NAME for part in text.split("/")):
        # found by tests/unit/test_fuzz_loaders.py: a 300-character name was an OSError traceback
        raise check.fail(field, text, f"longer than {MAX_REL_PATH} characters or {MAX_NAME} a name", hint)
    return text.rstrip("/")


def _project_file(check: _Checker, field: str, value: object) -> ProjectFile | None:
    if value is None:
        return None
    if isinstance(value, str):
        return ProjectFile(path=_rel_path(check, field, value))
    data = check.mapping(field, value)
    extra = sorted(set(data) - {"path", "extras"})
    if extra:
        raise check.fail(f"{field}.{extra[0]}", extra[0], "unknown field", f"{field} has path and extras")
    extras = check.str_list(f"{field}.extras", data.get("extras"))
    for i, e in enumerate(extras):
        check.pattern(f"{field}.extras[{i}]", e, EXTRA_RE, "an optional-dependency group name")
    return ProjectFile(
        path=_rel_path(check, f"{field}.path", data.get("path")), extras=tuple(sorted(set(extras)))
    )


def _indexes(check: _Checker, value: object) -> tuple[PackageIndex, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise check.fail("indexes", value, "expected a list", "write indexes as a list of {name, url}")
    if len(value) > MAX_ITEMS:  # as every other list of a spec (the schema's maxItems): never cut short
        raise check.fail("indexes", f"{len(value)} items", f"more than {MAX_ITEMS} items")
    out: list[PackageIndex] = []
    for i, item in enumerate(value):
        field = f"indexes[{i}]"
        data = check.mapping(field, item)
        extra = sorted(set(data) - {"name", "url", "username", "secret"})
        if extra:
            raise check.fail(
                f"{field}.{extra[0]}", extra[0], "unknown field", "an index has name, url, username, secret"
            )
        url = check.string(f"{field}.url", data.get("url"))
        if "@" in url:
            raise check.fail(
                f"{field}.url",
                "<redacted>",
                "credentials in an index URL are refused (they would land in the lock and the image)",
                "set username here and pass the token as a build secret (`secret:`)",
            )
        check.pattern(f"{field}.url", url, INDEX_URL_RE, "an https:// index URL without query")
        username, secret = data.get("username"), data.get("secret")
        out.append(
            PackageIndex(
                name=check.pattern(f"{field}.name", data.get("name"), INDEX_NAME_RE, "a lower-case name"),
                url=url,
                username=None
                if username is None
                else check.pattern(f"{field}.username", username, USERNAME_RE, "a user name, e.g. __token__"),
                secret=None
                if secret is None
                else check.pattern(f"{field}.secret", secret, SECRET_ID_RE, "a BuildKit secret id"),
            )
        )
    names = [i.name for i in out]
    dupes = sorted({n for n in names if names.count(n) > 1} | ({"framework", "pypi"} & set(names)))
    if dupes:
        raise check.fail("indexes", dupes[0], "duplicate or reserved index name", "give each its own name")
    return tuple(out)


def _argv(check: _Checker, field: str, value: object) -> tuple[str, ...] | None:
    """cmd/entrypoint: a list (exec form) or a string split as a shell would (no shell runs it)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise check.fail(field, value, f"cannot split it ({exc})", "write it as a YAML list") from None
    else:
        words = check.str_list(field, value)
    if not words or len(words) > MAX_ARGV:
        raise check.fail(field, value, f"expected 1 to {MAX_ARGV} words", 'e.g. ["python", "train.py"]')
    return tuple(_text(check, f"{field}[{i}]", w, 4096) for i, w in enumerate(words))


def _framework(check: _Checker, value: object) -> tuple[str, str]:
    hint = "a framework and PEP 440 specifier, e.g. 'torch==2.11.*' or 'jax>=0.5'"
    req = validate_requirement(check, "framework", value)
    if req.extras or req.marker:
        raise check.fail("framework", value, "extras and markers are chosen by the stack", hint)
    return canonicalize_name(req.name), str(req.specifier)


def _companions(check: _Checker, value: object) -> tuple[str, ...]:
    names = check.str_list("companions", value)
    for i, n in enumerate(names):
        check.pattern(f"companions[{i}]", n, NAME_RE, "a package name such as torchvision")
    return tuple(sorted({canonicalize_name(n) for n in names}))


def _requirements(check: _Checker, value: object, reserved: set[str]) -> list[str]:
    out: dict[str, str] = {}
    for i, text in enumerate(check.str_list("requirements", value)):
        field = f"requirements[{i}]"
        req = validate_requirement(check, field, text)
        name = canonicalize_name(req.name)
        if name in reserved:
            raise check.fail(
                field,
                text,
                f"{name} is pinned by the stack",
                "set it with `framework:` or `companions:` instead",
            )
        out[str(req)] = str(req)
    return sorted(out, key=str.lower)


def _apt(check: _Checker, value: object) -> list[str]:
    hint = "a Debian package name (e.g. libgl1), optionally =VERSION"
    return [check.pattern(f"apt[{i}]", v, APT_RE, hint) for i, v in enumerate(check.str_list("apt", value))]


def _env(check: _Checker, value: object) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for key, val in check.mapping("env", value).items():
        field = f"env.{key}"
        check.pattern(field, key, ENV_KEY_RE, "upper-case letters, digits and '_'")
        if key in RESERVED_ENV or key.startswith("ENVBUILDER_"):
            raise check.fail(
                field,
                key,
                "set by envbuilder from the stack",
                "remove it; envbuilder sets it from the resolved stack",
            )
        if key.startswith(RESERVED_ENV_PREFIX):
            # The Container Toolkit reads NVIDIA_* from the image (NVIDIA_DISABLE_REQUIRE switches
            # off its driver check, and run's): the stack sets those it needs, nothing else may.
            raise check.fail(
                field,
                key,
                "NVIDIA_* variables steer the NVIDIA Container Toolkit and are set by envbuilder",
                "remove it; to set one for a single job, pass it at run time: envbuilder run -e KEY=VALUE",
            )
        if isinstance(val, int) and not isinstance(val, bool):
            val = str(val)
        text = check.pattern(
            field, val, ENV_VALUE_RE, "printable ASCII without newlines, '\"', '\\', '$' or '`' (quote it)"
        )
        out.append((key, text))
    return tuple(sorted(out))


def _user(check: _Checker, value: object) -> tuple[str, int]:
    data = check.mapping("user", value)
    extra = sorted(set(data) - {"name", "uid"})
    if extra:
        raise check.fail(f"user.{extra[0]}", extra[0], "unknown field", "user has name and uid")
    name = check.pattern(
        "user.name", data.get("name", "envbuilder"), USER_RE, "a POSIX user name such as 'trainer'"
    )
    uid = data.get("uid", 1000)
    if not isinstance(uid, int) or isinstance(uid, bool) or not 1 <= uid <= 65533:
        raise check.fail(
            "user.uid",
            uid,
            "not an integer in 1..65533",
            "the image runs as a non-root user; 1000 is the usual choice",
        )
    return name, uid


def parse_certify_settings(value: object, where: str) -> CertifySettings:
    """A spec's `certify` mapping (also as read back from an image's io.envbuilder.certify label).
    Raises SpecError naming `where` and the field."""
    return _certify(_Checker(where), value)


def _certify(check: _Checker, value: object) -> CertifySettings:
    data = check.mapping("certify", value)
    extra = sorted(set(data) - {"level", "thresholds", "smoke"})
    if extra:
        raise check.fail(
            f"certify.{extra[0]}", extra[0], "unknown field", "certify has level, thresholds and smoke"
        )
    level = data.get("level", "default")
    if level not in ("quick", "default"):
        raise check.fail("certify.level", level, "unknown level", "use quick or default")
    thresholds: list[tuple[str, float]] = []
    for key, val in check.mapping("certify.thresholds", data.get("thresholds")).items():
        field = f"certify.thresholds.{key}"
        check.pattern(field, key, THRESHOLD_KEY_RE, "a lower-case threshold name")
        if isinstance(val, bool) or not isinstance(val, int | float) or not math.isfinite(val) or val < 0:
            raise check.fail(field, val, "not a finite number >= 0", "write a plain number")
        thresholds.append((key, float(val)))
    return CertifySettings(
        level=cast(CertifyLevel, level),
        thresholds=tuple(sorted(thresholds)),
        smoke=_smoke(check, data.get("smoke")),
    )


def _smoke(check: _Checker, value: object) -> ProjectSmoke | None:
    """certify.smoke: a command (exec form, checked as `cmd:` is), or {command, timeout_s}."""
    if value is None:
        return None
    if not isinstance(value, dict):
        command = _argv(check, "certify.smoke", value)
        assert command is not None
        return ProjectSmoke(command=command)
    data = check.mapping("certify.smoke", value)
    extra = sorted(set(data) - {"command", "timeout_s"})
    if extra:
        raise check.fail(
            f"certify.smoke.{extra[0]}", extra[0], "unknown field", "certify.smoke has command and timeout_s"
        )
    command = _argv(check, "certify.smoke.command", data.get("command"))
    if command is None:
        raise check.fail(
            "certify.smoke.command",
            None,
            "missing",
            'give the command that proves the project runs, e.g. ["python", "-m", "mypkg.smoke"]',
        )
    timeout = data.get("timeout_s", SMOKE_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= SMOKE_TIMEOUT_MAX_S:
        raise check.fail(
            "certify.smoke.timeout_s",
            timeout,
            f"not a whole number of seconds in 1..{SMOKE_TIMEOUT_MAX_S}",
            f"the default is {SMOKE_TIMEOUT_S}; a smoke test is one step, not a training run",
        )
    return ProjectSmoke(command=command, timeout_s=timeout)
