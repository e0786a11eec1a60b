"""Image specs (images/NAME.yaml): load, validate every user value, and expose a typed ImageSpec.

Nothing a user wrote reaches a template before passing a strict check here; a refused value
raises SpecError naming the file, the field and the value, with a hint. Values are never escaped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder.errors import SpecError
from envbuilder.matrix.model import Strategy
from envbuilder.resolve.model import Request

SpecFlavor = Literal["runtime", "devel"]
CertifyLevel = Literal["quick", "default"]

SCHEMA_VERSION = 1
MAX_ITEMS = 200

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
PYTHON_RE = re.compile(r"^3\.[0-9]{1,2}$")  # [0-9]: \d also takes full-width digits
# Debian policy names (lower case, >= 2 chars) and an optional `=version` pin.
APT_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]{1,62}(=[0-9][A-Za-z0-9.+~:-]{0,127})?$")
ENV_KEY_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
# Printable ASCII without `"`, `\`, `$` and backtick: safe inside a double-quoted ENV value.
ENV_VALUE_RE = re.compile(r"^[\x20-\x21\x23\x25-\x5b\x5d-\x5f\x61-\x7e]{0,4096}$")
# The same without `'`: safe inside a single-quoted LABEL value.
DESCRIPTION_RE = re.compile(r"^[\x20-\x21\x23\x25-\x26\x28-\x5b\x5d-\x5f\x61-\x7e]{0,300}$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
WORKDIR_RE = re.compile(r"^(/[A-Za-z0-9._-]+)+$|^/$")
THRESHOLD_KEY_RE = re.compile(r"^[a-z][a-z0-9_.]{0,63}$")
SOURCE_RE = re.compile(r"^https://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~%+-]*)*$")
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
_TOP_KEYS = frozenset(
    {
        *("schema_version", "name", "description", "source", "framework", "python", "strategy"),
        *("flavor", "companions", "requirements", "apt", "env", "user", "workdir", "certify"),
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifySettings:
    """How `certify` treats this image: quick (smoke test) or default, plus threshold overrides."""

    level: CertifyLevel = "default"
    thresholds: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "thresholds": dict(self.thresholds)}


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
    requirements: tuple[str, ...]  # canonical PEP 508 strings
    apt: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    user: str
    uid: int
    workdir: str
    certify: CertifySettings

    def to_dict(self) -> dict[str, Any]:
        """Canonical form: what the lock hash covers (everything that changes the image)."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "framework": f"{self.framework}{self.specifier}",
            "python": self.python,
            "strategy": self.strategy,
            "flavor": self.flavor,
            "companions": list(self.companions),
            "requirements": list(self.requirements),
            "apt": list(self.apt),
            "env": dict(self.env),
            "user": {"name": self.user, "uid": self.uid},
            "workdir": self.workdir,
            "certify": self.certify.to_dict(),
        }

    def to_request(self, *, cpu_only: bool = False) -> Request:
        """The resolver request this spec asks for."""
        return Request(
            framework=self.framework,
            specifier=self.specifier,
            python=self.python,
            strategy=self.strategy,
            flavor=self.flavor,
            cpu_only=cpu_only,
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
    if not text or len(text) > 200 or not text.isascii() or not text.isprintable():
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
        raise check.fail(field, text, f"not a PEP 508 requirement ({exc})", hint) from None
    if req.url:
        raise check.fail(field, text, "direct URL references are refused", hint)
    if again != canonical or Counter(_squeeze(text)) != Counter(_squeeze(canonical)):
        raise check.fail(field, text, f"does not round-trip through packaging ({canonical!r})", hint)
    return req


def load_spec(path: Path) -> ImageSpec:
    """Read and validate images/NAME.yaml. Raises SpecError (missing file, bad YAML, bad value)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(
            f"{path}: cannot read image spec: {exc.strerror}",
            "give the path of an images/NAME.yaml file",
            file=str(path),
        ) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SpecError(
            f"{path}: not valid YAML: {exc}", "check the indentation and quoting", file=str(path)
        ) from None
    return parse_spec(raw, str(path))


def parse_spec(raw: object, path: str = "<spec>") -> ImageSpec:
    """Validate an already-parsed spec mapping. Raises SpecError naming field and value."""
    check = _Checker(path)
    data = check.mapping("<top>", raw)
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise check.fail(
            unknown[0], unknown[0], "unknown field", f"known fields: {', '.join(sorted(_TOP_KEYS))}"
        )
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
    description = check.pattern(
        "description",
        data.get("description", ""),
        DESCRIPTION_RE,
        "one line of printable ASCII without quotes, '\\', '$' or '`'",
    )
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
    requirements = _requirements(check, data.get("requirements"), {framework, *companions})
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
    )


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
    extra = sorted(set(data) - {"level", "thresholds"})
    if extra:
        raise check.fail(f"certify.{extra[0]}", extra[0], "unknown field", "certify has level and thresholds")
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
    return CertifySettings(level=cast(CertifyLevel, level), thresholds=tuple(sorted(thresholds)))
