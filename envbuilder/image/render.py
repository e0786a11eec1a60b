"""Turn an ImageSpec and a resolved Stack into a Dockerfile and a build context (no Docker here).

Every choice is made here and handed to templates/Dockerfile.j2 as one context dict (the
contract is templates/README.md); values that come from a stack or lock file are checked
against strict patterns first, so nothing unchecked is ever formatted into the file.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import jinja2
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder import resources
from envbuilder.errors import SpecError, UsageError
from envbuilder.hashing import canonical_json, sha256_text
from envbuilder.host.model import Host
from envbuilder.image.lock import lock_hash
from envbuilder.image.metadata import (
    LABEL_ARCHS,
    LABEL_CERTIFY,
    LABEL_HARNESS,
    LABEL_LOCK_HASH,
    LABEL_MIN_DRIVER,
    LABEL_STACK,
    NONE,
    archs_label,
)
from envbuilder.image.spec import ImageSpec
from envbuilder.image.validate import (
    IMAGE_REF_RE,
    LABEL_KEY_RE,
    LABEL_VALUE_RE,
    REGENERATE_RE,
    check,
    refuse,
    validate_stack,
)
from envbuilder.matrix.model import Matrix
from envbuilder.resolve.model import Stack

VENV = "/opt/venv"
BASE_VENV_RE = re.compile(r"/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")
HARNESS_DEST = "/opt/envbuilder/harness"
ENTRYPOINT_SOURCE = "entrypoint.sh"  # in the build context
ENTRYPOINT_DEST = "/opt/envbuilder/entrypoint.sh"
PIP_CACHE_MOUNT = "type=cache,target=/root/.cache/pip"
REQUIREMENTS_DIR = "requirements"  # context subdir, bind-mounted for the user-requirements step
REQUIREMENTS_MOUNT = "/tmp/envbuilder-requirements"
WHEELHOUSE_DIR = "wheelhouse"  # context subdir holding the offline wheels
WHEELHOUSE_MOUNT = "/wheelhouse"
SECRET_CA = "ca"
SECRET_INDEX = "pip_index_url"
SECRET_EXTRA_INDEX = "pip_extra_index_url"
RENDER_MARKER = ".envbuilder-render"


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderOptions:
    """How to render beyond the stack: overrides, offline wheels, build secrets, extra labels."""

    base_image: str | None = None  # replaces stack.base_image (tests use a local image)
    python_install: Literal["apt", "present"] | None = None  # replaces stack.python_install
    wheelhouse: Path | None = None  # offline: wheels copied to context/wheelhouse, --no-index
    ca_secret: bool = False  # BuildKit secret id=ca: CA bundle for pip (TLS-intercepting proxy)
    index_secret: bool = False  # secret id=pip_index_url: private index (with token) for pip
    extra_index_secret: bool = False  # secret id=pip_extra_index_url
    labels: tuple[tuple[str, str], ...] = ()  # extra LABELs (not io.envbuilder.*)
    uses_system_cuda: bool | None = None  # from the matrix: do the wheels load the image's CUDA?
    regenerate: str | None = None  # the command line printed in the header
    # Install into the Python environment the base image already has (an NGC container, an
    # imported host environment) instead of creating /opt/venv: pins it already satisfies cost
    # nothing and need no network. Validated as an absolute path.
    base_venv: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedContext:
    dockerfile: Path
    context_dir: Path
    dockerfile_sha256: str
    lock_hash: str  # the io.envbuilder.lock-hash label
    stack: Stack  # the stack as rendered (overrides applied, chosen companions only)


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.templates_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # a Dockerfile, not HTML: values are validated, never escaped
    )


_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """The one Jinja environment (built on first use)."""
    global _ENV
    if _ENV is None:
        _ENV = _environment()
    return _ENV


def effective_stack(stack: Stack, options: RenderOptions) -> Stack:
    """The stack as rendered: overrides applied and recorded in its notes. Raises SpecError."""
    notes = list(stack.notes)
    if options.base_image and options.base_image != stack.base_image:
        check("base_image", options.base_image, IMAGE_REF_RE, "a Docker image reference")
        notes.append(f"base image overridden: {options.base_image} (resolved: {stack.base_image})")
        stack = replace(stack, base_image=options.base_image)
    if options.python_install and options.python_install != stack.python_install:
        notes.append(f"python_install overridden: {options.python_install}")
        stack = replace(stack, python_install=options.python_install)
    return replace(stack, notes=tuple(notes))


def uses_system_cuda(matrix: Matrix, stack: Stack) -> bool | None:
    """Whether the stack's system-cuda wheels load the image's CUDA (None: not in the matrix)."""
    for fw in matrix.frameworks:
        for rel in fw.releases if fw.name == stack.framework else ():
            for variant in rel.variants if rel.version == stack.version else ():
                if variant.name == stack.variant:
                    return variant.uses_system_cuda
    return None


def regenerate_command(spec_path: str, host: Host, stack: Stack) -> str:
    """The command line in the Dockerfile header that renders the file again: the spec, the host
    when it was given (a probed host is probed again), --cpu for a CPU stack on a GPU host."""
    argv = ["envbuilder", "render", spec_path]
    if host.source == "given":
        argv += ["--driver", host.driver] if host.driver else []
        for gpu in host.gpus:
            argv += ["--gpu", gpu.model] if gpu.model else ["--cc", gpu.cc]
    if stack.cuda is None and host.gpus:
        argv.append("--cpu")
    return shlex.join(argv)


def render_options(
    matrix: Matrix,
    spec: ImageSpec,
    stack: Stack,
    host: Host,
    *,
    base_image: str | None = None,
    base_venv: str | None = None,
    wheelhouse: Path | None = None,
    secret_ids: Collection[str] = (),
) -> RenderOptions:
    """The render options for `stack` resolved on `host`: the one place `render` and `build`
    choose them, so both write the same Dockerfile for the same inputs."""
    return RenderOptions(
        base_image=base_image,
        base_venv=base_venv,
        wheelhouse=wheelhouse,
        ca_secret=SECRET_CA in secret_ids,
        index_secret=SECRET_INDEX in secret_ids,
        extra_index_secret=SECRET_EXTRA_INDEX in secret_ids,
        uses_system_cuda=uses_system_cuda(matrix, stack),
        regenerate=regenerate_command(spec.path, host, stack),
    )


def _label_value(text: str, field: str) -> str:
    """Single-quoted LABEL values: JSON escapes `'`; anything else with one is refused."""
    text = text.replace("'", "\\u0027") if text.startswith(("{", "[")) else text
    if not LABEL_VALUE_RE.fullmatch(text):
        raise refuse(field, text, "labels are one line of printable ASCII without `'`")
    return text


def _labels(spec: ImageSpec, stack: Stack, options: RenderOptions) -> list[tuple[str, str]]:
    labels = {
        "org.opencontainers.image.title": spec.name,
        "org.opencontainers.image.description": spec.description,
        "org.opencontainers.image.version": stack.id,
        "org.opencontainers.image.base.name": stack.base_image,
        LABEL_STACK: canonical_json(stack.to_dict()),
        LABEL_MIN_DRIVER: stack.min_driver or NONE,
        LABEL_ARCHS: archs_label(stack),
        LABEL_LOCK_HASH: lock_hash(stack, spec.to_dict()),
        LABEL_CERTIFY: canonical_json(spec.certify.to_dict()),
        LABEL_HARNESS: HARNESS_DEST,
    }
    if spec.source:
        labels["org.opencontainers.image.source"] = spec.source
    for key, value in options.labels:
        check("labels", key, LABEL_KEY_RE, "label keys are lower-case dotted names")
        if key in labels or key.startswith("io.envbuilder."):
            raise refuse("labels", key, "this label is set by envbuilder")
        labels[key] = value
    return [(k, _label_value(v, f"label {k}")) for k, v in sorted(labels.items())]


def _header(spec: ImageSpec, stack: Stack, options: RenderOptions) -> list[str]:
    spec_ref = spec.path if re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", spec.path) else spec.name
    regenerate = f"envbuilder render {spec_ref}"
    if options.regenerate and REGENERATE_RE.fullmatch(options.regenerate):
        regenerate = options.regenerate  # else (odd characters in a path) the plain form
    cuda = f"CUDA {stack.cuda}" if stack.cuda else "CPU only"
    return [
        f"Generated by envbuilder from {spec_ref}: do not edit, changes are overwritten.",
        f"Regenerate: {regenerate}",
        f"Stack {stack.id}: {stack.framework} {stack.version} ({stack.variant}), {cuda}, "
        f"Python {stack.python}, strategy {stack.strategy}.",
    ]


def _framework_comments(stack: Stack, options: RenderOptions) -> list[str]:
    if stack.strategy == "bundled":
        if not stack.cuda:
            return ["CPU-only wheels: no CUDA libraries in this image."]
        return [
            f"The {stack.framework} wheels bring their own CUDA {stack.cuda} libraries;",
            "the base image carries none, so there is one copy of CUDA in the image.",
        ]
    if options.uses_system_cuda:
        return [f"{stack.framework} loads the CUDA {stack.cuda} libraries of the base image."]
    lead = (
        f"NOTE: the {stack.framework} wheels carry their own CUDA libraries"
        if options.uses_system_cuda is False
        else f"NOTE: if the {stack.framework} wheels carry their own CUDA libraries (torch's do)"
    )
    return [
        f"{lead}, so the",
        "base image's CUDA runtime is a second, unused copy (gigabytes). `strategy: bundled`",
        "avoids it; keep system-cuda for the devel toolchain (nvcc) or a system CUDA you need.",
    ]


def _pip_step(stack: Stack, options: RenderOptions, *, framework: bool) -> dict[str, Any]:
    mounts: list[str] = []
    env: list[str] = []
    # `python -m pip`: the environment's own pip, also where a venv (uv-made) has no pip script.
    lines = ["python -m pip install"]
    if options.wheelhouse is not None:
        mounts.append(f"type=bind,source={WHEELHOUSE_DIR},target={WHEELHOUSE_MOUNT}")
        # Local wheels: nothing to cache, and no cache mount to keep one out of the layer.
        lines.append(f"--no-cache-dir --no-index --find-links {WHEELHOUSE_MOUNT}")
    else:
        mounts.append(PIP_CACHE_MOUNT)
        if options.ca_secret:
            mounts.append(f"type=secret,id={SECRET_CA},required=true")
            env += [f"PIP_CERT=/run/secrets/{SECRET_CA}", f"SSL_CERT_FILE=/run/secrets/{SECRET_CA}"]
        for flag, sid, var in (
            (options.index_secret, SECRET_INDEX, "PIP_INDEX_URL"),
            (options.extra_index_secret, SECRET_EXTRA_INDEX, "PIP_EXTRA_INDEX_URL"),
        ):
            if flag:
                mounts.append(f"type=secret,id={sid},required=true")
                env.append(f'{var}="$(cat /run/secrets/{sid})"')
        # A private index (secret) replaces the framework index: it must mirror it.
        if framework and stack.index_url and not options.index_secret:
            lines.append(f"--index-url {stack.index_url}")
    if framework:
        pins = sorted(stack.packages) + sorted(req for _, req in stack.companions)
        # Extras' brackets are a shell glob: quote them (PIN_RE admits no quote or `$`).
        lines += [f"'{pin}'" if "[" in pin else pin for pin in pins]
    else:
        mounts.append(f"type=bind,source={REQUIREMENTS_DIR},target={REQUIREMENTS_MOUNT}")
        lines += [f"-r {REQUIREMENTS_MOUNT}/user.txt", f"-c {REQUIREMENTS_MOUNT}/constraints.txt"]
    return {"mounts": mounts, "env": env, "lines": lines}


def _select_companions(spec: ImageSpec, stack: Stack) -> Stack:
    offered: dict[str, tuple[str, str]] = {
        canonicalize_name(name): (name, req) for name, req in stack.companions
    }
    missing = [c for c in spec.companions if c not in offered]
    if missing:
        raise SpecError(
            f"{spec.path}: field 'companions': {missing[0]!r} is not offered for "
            f"{stack.framework} {stack.version}",
            hint=f"offered: {', '.join(sorted(offered)) or 'none'}",
            file=spec.path,
            field="companions",
            value=missing[0],
        )
    chosen = tuple(sorted(offered[c] for c in spec.companions))
    return replace(stack, companions=chosen)


def constraints(stack: Stack) -> list[str]:
    """The framework pins as a pip constraints file (no extras: pip refuses them there)."""
    out = set()
    for pin in (*stack.packages, *(req for _, req in stack.companions)):
        try:
            req = Requirement(pin)
        except InvalidRequirement as exc:  # validate_stack already guards this
            raise refuse("packages", pin, "exact pins only") from exc
        out.add(f"{req.name}{req.specifier}")
    return sorted(out)


def rendered_stack(spec: ImageSpec, stack: Stack, options: RenderOptions) -> Stack:
    """The stack the image records: validated, overrides applied, only the spec's companions.

    Raises SpecError on a refused stack value or a companion the stack does not offer.
    """
    validate_stack(stack)
    stack = _select_companions(spec, effective_stack(stack, options))
    validate_stack(stack)
    return stack


def template_context(spec: ImageSpec, stack: Stack, options: RenderOptions) -> dict[str, Any]:
    """Everything the templates see (templates/README.md). Raises SpecError on a bad value."""
    stack = rendered_stack(spec, stack, options)
    pinned = {canonicalize_name(Requirement(p).name) for p in constraints(stack)}
    for req in spec.requirements:
        if canonicalize_name(Requirement(req).name) in pinned:
            raise SpecError(
                f"{spec.path}: field 'requirements': {req!r} is pinned by the stack",
                hint="remove it: the stack installs it at the resolved version",
                file=spec.path,
                field="requirements",
                value=req,
            )
    py = stack.python
    python_apt = (
        [f"python{py}", f"python{py}-venv"] + ([f"python{py}-dev"] if spec.flavor == "devel" else [])
        if stack.python_install == "apt" and options.base_venv is None
        else []
    )
    nvidia_env: list[tuple[str, str]] = []
    if stack.strategy == "bundled" and stack.cuda:
        require = stack.require_cuda or ".".join(stack.cuda.split(".")[:2])
        require = require if require.startswith("cuda>=") else f"cuda>={require}"
        nvidia_env = [
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
            ("NVIDIA_REQUIRE_CUDA", require),
        ]
    return {
        "header": _header(spec, stack, options),
        "base_image": stack.base_image,
        "os": stack.os,
        "python": {
            "version": py,
            "executable": f"python{py}",
            "apt_packages": python_apt,
            "create_venv": options.base_venv is None,
        },
        "venv": venv_path(options),
        "nvidia_env": [(k, json.dumps(v)) for k, v in nvidia_env],
        "min_driver": stack.min_driver or "none",
        "framework": {
            "comments": _framework_comments(stack, options),
            "step": _pip_step(stack, options, framework=True),
        },
        "apt_packages": list(spec.apt),
        "user_requirements": (_pip_step(stack, options, framework=False) if spec.requirements else None),
        "user": {"name": spec.user, "uid": spec.uid, "gid": spec.uid},
        "workdir": spec.workdir,
        "harness": {"source": "harness", "dest": HARNESS_DEST},
        # The driver check at start-up: refuses a driver below the stack's minimum whatever
        # starts the container (env None: a CPU stack, nothing to check).
        "entrypoint": {
            "source": ENTRYPOINT_SOURCE,
            "dest": ENTRYPOINT_DEST,
            "min_driver": json.dumps(stack.min_driver) if stack.min_driver else None,
        },
        "env": [(k, json.dumps(v)) for k, v in spec.env],
        "labels": _labels(spec, stack, options),
    }


def venv_path(options: RenderOptions) -> str:
    """Where the image's Python environment lives. Raises SpecError for a bad --base-venv."""
    if options.base_venv is None:
        return VENV
    if not BASE_VENV_RE.fullmatch(options.base_venv):
        raise SpecError(
            f"refused base venv {options.base_venv!r}",
            hint="give an absolute path of letters, digits, '.', '_', '-' and '/', e.g. /opt/venv",
            field="--base-venv",
            value=options.base_venv,
        )
    return options.base_venv


def render_dockerfile(spec: ImageSpec, stack: Stack, options: RenderOptions | None = None) -> str:
    """The Dockerfile text for `spec` built on `stack`. Raises SpecError on a refused value."""
    ctx = template_context(spec, stack, options or RenderOptions())
    return environment().get_template("Dockerfile.j2").render(ctx)


def _copy_harness(dest: Path) -> None:
    src = resources.harness_dir()
    dest.mkdir(parents=True)
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _copy_wheelhouse(src: Path, dest: Path) -> None:
    wheels = sorted(p for p in src.glob("*.whl") if p.is_file()) if src.is_dir() else []
    if not wheels:
        raise UsageError(
            f"wheelhouse {src} holds no .whl files",
            hint="fill it with `pip download --only-binary=:all: -d DIR ...`",
        )
    dest.mkdir(parents=True)
    for wheel in wheels:
        try:
            os.link(wheel, dest / wheel.name)  # same filesystem: no copy of gigabytes
        except OSError:
            shutil.copy2(wheel, dest / wheel.name)


def write_build_context(
    spec: ImageSpec, stack: Stack, out_dir: Path, options: RenderOptions | None = None
) -> RenderedContext:
    """Write out_dir/Dockerfile and out_dir/context/ (requirements, harness, entrypoint.sh,
    wheelhouse).

    Atomic: built in a temporary sibling folder, then renamed over out_dir. An existing out_dir
    that envbuilder did not write is refused. Raises SpecError (bad value), UsageError (out_dir
    not ours, empty wheelhouse).
    """
    options = options or RenderOptions()
    final = rendered_stack(spec, stack, options)
    text = render_dockerfile(spec, stack, options)
    out_dir = out_dir.resolve()
    if out_dir.exists() and not (out_dir / RENDER_MARKER).is_file():
        raise UsageError(
            f"{out_dir} exists and was not written by envbuilder render",
            hint="choose an empty or new folder with --out",
        )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        (tmp / RENDER_MARKER).write_text(f"{spec.name}\n", encoding="utf-8")
        (tmp / "Dockerfile").write_text(text, encoding="utf-8")
        context = tmp / "context"
        (context / REQUIREMENTS_DIR).mkdir(parents=True)
        (context / REQUIREMENTS_DIR / "user.txt").write_text(
            "".join(f"{r}\n" for r in spec.requirements), encoding="utf-8"
        )
        (context / REQUIREMENTS_DIR / "constraints.txt").write_text(
            "".join(f"{c}\n" for c in constraints(final)), encoding="utf-8"
        )
        _copy_harness(context / "harness")
        entrypoint = context / ENTRYPOINT_SOURCE
        shutil.copyfile(resources.entrypoint_script(), entrypoint)
        entrypoint.chmod(0o755)  # COPY keeps the mode: the image's user runs it
        if options.wheelhouse is not None:
            _copy_wheelhouse(options.wheelhouse, context / WHEELHOUSE_DIR)
        old = out_dir.with_name(f".{out_dir.name}.old")
        if out_dir.exists():
            shutil.rmtree(old, ignore_errors=True)
            out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return RenderedContext(
        dockerfile=out_dir / "Dockerfile",
        context_dir=out_dir / "context",
        dockerfile_sha256=sha256_text(text),
        lock_hash=lock_hash(final, spec.to_dict()),
        stack=final,
    )
