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
import stat
import urllib.parse
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import jinja2
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbuilder import resources
from envbuilder.atomic import default_mode
from envbuilder.errors import OutputError, SpecError, UsageError
from envbuilder.hashing import canonical_json, sha256_text
from envbuilder.host.model import Host
from envbuilder.image.lock import lock_hash
from envbuilder.image.metadata import (
    JIT_CACHE_DIR,
    LABEL_ARCHS,
    LABEL_CERTIFY,
    LABEL_HARNESS,
    LABEL_JIT_CACHE,
    LABEL_LOCK_HASH,
    LABEL_MIN_DRIVER,
    LABEL_STACK,
    NONE,
    archs_label,
)
from envbuilder.image.packages import (
    DEFAULT_INDEX,
    Group,
    LockedPackage,
    PackageLock,
    Platform,
    install_indexes,
    uv_binary,
)
from envbuilder.image.secrets import is_secret_ref
from envbuilder.image.sources import INDEX_URL_RE
from envbuilder.image.spec import ImageSpec
from envbuilder.image.validate import (
    DRIVER_RE,
    IMAGE_REF_RE,
    LABEL_KEY_RE,
    REGENERATE_RE,
    check,
    dockerfile_string,
    refuse,
    validate_stack,
)
from envbuilder.lifecycle import OWNER_FILE, mark_temp_dir, sweep_temp_dirs, temp_dir
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import DEFAULT_PLATFORM, machine_of
from envbuilder.resolve.forward_compat import COMPAT_DIR
from envbuilder.resolve.model import Stack

# Steps that compile .pyc files (the venv's pip, every install) run with this: py_compile then
# writes hash-based .pyc files, the same bytes on every build, where timestamped ones (the .py's
# time at install) would make two builds' layers differ (the venv layer did, measured).
HASHED_PYC_ENV = "SOURCE_DATE_EPOCH=0"
VENV = "/opt/venv"
# An absolute path of plain segments, none `.` or `..` (as the spec's workdir: the folder named is
# the folder written into ENV VIRTUAL_ENV, PATH and the install steps).
BASE_VENV_RE = re.compile(r"(?:/(?!\.\.?(?:/|$))[A-Za-z0-9._-]+)+")
HARNESS_DEST = "/opt/envbuilder/harness"
ENTRYPOINT_SOURCE = "entrypoint.sh"  # in the build context
ENTRYPOINT_DEST = "/opt/envbuilder/entrypoint.sh"
CACHE_MOUNTS = {"pip": "type=cache,target=/root/.cache/pip", "uv": "type=cache,target=/root/.cache/uv"}
LOCK_DIR = "lock"  # context subdir: lock/<group>/requirements.txt, one bind mount per install step
LOCK_MOUNT = "/tmp/envbuilder-lock"
TOOLS_DIR = "tools"  # context subdir holding the host's uv binary (bind-mounted, never in a layer)
TOOLS_MOUNT = "/tmp/envbuilder-tools"
PROJECT_DIR = "project"  # context subdir: the spec's `context:` folder, .dockerignore applied
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
    # The package locks (one per platform): the install steps read the target platform's; the
    # lock-hash label covers them all. Without any (render --print, goldens) the steps are the
    # same and the context holds no pins.
    package_locks: tuple[PackageLock, ...] = ()
    platform: Platform = "x86_64"
    # Paths this build writes or reads (its lock, its wheelhouse): left out of the project's
    # context when they lie in it, beside engine/context.py's OWN_OUTPUTS.
    context_outputs: tuple[Path, ...] = ()

    @property
    def packages(self) -> PackageLock | None:
        """The package lock of the target platform, if locked."""
        return next((p for p in self.package_locks if p.platform == self.platform), None)


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
    if stack.platform != DEFAULT_PLATFORM:
        argv += ["--platform", stack.platform]
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
        platform=machine_of(stack.platform),
    )


def _labels(spec: ImageSpec, stack: Stack, options: RenderOptions) -> list[tuple[str, str]]:
    labels = {
        "org.opencontainers.image.title": spec.name,
        "org.opencontainers.image.description": spec.description,
        "org.opencontainers.image.version": stack.id,
        "org.opencontainers.image.base.name": stack.base_image,
        LABEL_STACK: canonical_json(stack.to_dict()),
        LABEL_MIN_DRIVER: stack.min_driver or NONE,
        LABEL_ARCHS: archs_label(stack),
        LABEL_LOCK_HASH: lock_hash(stack, spec.to_dict(), options.package_locks),
        LABEL_CERTIFY: canonical_json(spec.certify.to_dict()),
        LABEL_HARNESS: HARNESS_DEST,
        LABEL_JIT_CACHE: JIT_CACHE_DIR,
    }
    if spec.source:
        labels["org.opencontainers.image.source"] = spec.source
    for key, value in options.labels:
        check("labels", key, LABEL_KEY_RE, "label keys are lower-case dotted names")
        if key in labels or key.startswith("io.envbuilder."):
            raise refuse("labels", key, "this label is set by envbuilder")
        labels[key] = value
    return [(k, dockerfile_string(v, f"label {k}")) for k, v in sorted(labels.items())]


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


def _base_provides(options: RenderOptions) -> tuple[LockedPackage, ...]:
    """The framework packages the base image's own environment provides (lock group base)."""
    return options.packages.group("base") if options.packages is not None else ()


def _framework_comments(stack: Stack, options: RenderOptions) -> list[str]:
    provided = _base_provides(options)
    if provided:
        return [
            f"The base image's environment ({venv_path(options)}) provides the framework:",
            ", ".join(f"{p.name} {p.version}" for p in provided) + " (the lock records them;",
            "the build checks that the image still holds them). Nothing is installed for it here.",
        ]
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


def _install_step(spec: ImageSpec, stack: Stack, options: RenderOptions, group: Group) -> dict[str, Any]:
    """One install of a lock group: `--require-hashes --no-deps` over lock/<group>/requirements.txt
    (bind-mounted), with uv (the host's binary, bind-mounted) or pip, a cache mount for either."""
    installer = spec.installer
    mounts = [CACHE_MOUNTS[installer], f"type=bind,source={LOCK_DIR}/{group},target={LOCK_MOUNT}"]
    env: list[str] = []
    python = f"{venv_path(options)}/bin/python"
    if installer == "uv":
        mounts.append(f"type=bind,source={TOOLS_DIR},target={TOOLS_MOUNT}")
        # The cache is another filesystem: copy, do not hardlink, out of it.
        lines = [f"{TOOLS_MOUNT}/uv pip install --python {python} --no-config --link-mode copy"]
        lines.append("--require-hashes --no-deps --compile-bytecode")
        # No INSTALLER, REQUESTED, direct_url.json or uv_cache.json: the last holds the wheel
        # file's time as the build saw it, the one difference left between two reproducible
        # builds' install layers (measured). The installed digest leaves them out anyway
        # (harness/installed.py).
        env.append("UV_NO_INSTALLER_METADATA=1")
    else:
        lines = [f"{python} -m pip install --require-hashes --no-deps"]
    env.append(HASHED_PYC_ENV)
    if options.wheelhouse is not None:
        mounts.append(f"type=bind,source={WHEELHOUSE_DIR},target={WHEELHOUSE_MOUNT}")
        offline = " --offline" if installer == "uv" else ""
        lines.append(f"--no-index --find-links {WHEELHOUSE_MOUNT}{offline}")
    else:
        if options.ca_secret:
            mounts.append(f"type=secret,id={SECRET_CA},required=true")
            env += [f"PIP_CERT=/run/secrets/{SECRET_CA}", f"SSL_CERT_FILE=/run/secrets/{SECRET_CA}"]
        mounts, env, index_lines = _index_flags(spec, stack, options, group, mounts, env)
        lines += index_lines
    lines.append(f"-r {LOCK_MOUNT}/requirements.txt")
    return {"mounts": mounts, "env": env, "lines": lines}


def _index_flags(
    spec: ImageSpec, stack: Stack, options: RenderOptions, group: Group, mounts: list[str], env: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """Where the installer may fetch the group's wheels (any file whose sha256 is locked will do):
    the lock's indexes, the spec's credentials read from their secrets inside this RUN only; a
    private mirror given as a secret (pip_index_url) replaces them all."""
    if options.packages is not None:
        indexes = list(options.packages.index_urls(group))
    else:  # not locked yet (render --print): the indexes a lock would name
        indexes = list(
            install_indexes(
                group,
                framework_index=stack.index_url,
                default_index=DEFAULT_INDEX,
                indexes=spec.indexes,
            )
        )
    words: list[str] = []
    if options.index_secret:
        mounts = [*mounts, f"type=secret,id={SECRET_INDEX},required=true"]
        words = [f'"$(cat /run/secrets/{SECRET_INDEX})"']
        indexes = []
    secret = next((url for _, url in indexes if is_secret_ref(url)), None)
    if secret is not None:
        raise UsageError(
            f"the lock records a mirror given as a secret ({secret}); the build needs it again",
            hint=f"build: --pip-index-url-file FILE; render: --secret {SECRET_INDEX} "
            "(the mirror's URL, with its token, as the lock was made with)",
        )
    by_url = {i.url: i for i in spec.indexes}
    for position, (name, url) in enumerate(indexes):
        check("index_url", url, INDEX_URL_RE, "an https:// index URL without credentials or query")
        index = by_url.get(url)
        last = position == len(indexes) - 1
        word = f"{name}={url}" if spec.installer == "uv" and not (last and index is None) else url
        if index is not None and index.secret is not None:
            mounts = [*mounts, f"type=secret,id={index.secret},required=true"]
            password = f"$(cat /run/secrets/{index.secret})"
            user = index.username or "__token__"
            if spec.installer == "uv":  # uv reads the credentials of a named index from these
                prefix = index.env_prefix
                env = [*env, f"{prefix}_USERNAME={user}", f'{prefix}_PASSWORD="{password}"']
            else:
                scheme, _, rest = url.partition("://")
                word = f'"{scheme}://{urllib.parse.quote(user, safe="")}:{password}@{rest}"'
        words.append(word)
    if options.extra_index_secret:
        mounts = [*mounts, f"type=secret,id={SECRET_EXTRA_INDEX},required=true"]
        words.insert(max(len(words) - 1, 0), f'"$(cat /run/secrets/{SECRET_EXTRA_INDEX})"')
    return mounts, env, _index_words(spec.installer, words)


def _index_words(installer: str, words: list[str]) -> list[str]:
    """uv: every index but the last as --index, the last as --default-index (else uv adds
    PyPI), any file with a locked hash accepted; pip: --index-url, then --extra-index-url."""
    if not words:
        return []
    if installer == "uv":
        out = [f"--index {w}" for w in words[:-1]] + [f"--default-index {words[-1]}"]
        return [*out, "--index-strategy unsafe-best-match"]
    return [f"--index-url {words[0]}"] + [f"--extra-index-url {w}" for w in words[1:]]


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
    framework_pins = (*stack.packages, *dict(stack.companions).values())
    pinned = {canonicalize_name(Requirement(p).name) for p in framework_pins}
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
        # FROM --platform=...: a stack for another platform than Docker's default pins its base
        # (a plain `docker build` of the rendered file then builds for it, or fails clearly)
        "from_platform": None if stack.platform == DEFAULT_PLATFORM else stack.platform,
        "forward_compat": _forward_compat(stack),
        "os": stack.os,
        "python": {
            "version": py,
            "executable": f"python{py}",
            "apt_packages": python_apt,
            "create_venv": options.base_venv is None,
        },
        "venv": venv_path(options),
        "hashed_pyc_env": HASHED_PYC_ENV,
        "nvidia_env": [(k, json.dumps(v)) for k, v in nvidia_env],
        "min_driver": stack.min_driver or "none",
        "framework": {
            "comments": _framework_comments(stack, options),
            "step": None if _base_provides(options) else _install_step(spec, stack, options, "framework"),
        },
        "installer": spec.installer,
        "apt_packages": list(spec.apt),
        "user_requirements": (
            _install_step(spec, stack, options, "project") if _has_project_group(spec, options) else None
        ),
        "project": {"source": PROJECT_DIR} if spec.context is not None else None,
        # The spec's command (default: a shell), run by the driver check below.
        "cmd": _exec_form(spec.cmd or ("/bin/bash",)),
        "user": {"name": spec.user, "uid": spec.uid, "gid": spec.uid},
        "workdir": spec.workdir,
        "jit_cache_dir": JIT_CACHE_DIR,
        "harness": {"source": "harness", "dest": HARNESS_DEST},
        # The driver check at start-up: refuses a driver below the stack's minimum whatever
        # starts the container (env None: a CPU stack, nothing to check).
        "entrypoint": {
            "source": ENTRYPOINT_SOURCE,
            "dest": ENTRYPOINT_DEST,
            "min_driver": json.dumps(stack.min_driver) if stack.min_driver else None,
            # forward compatibility: below this driver the entrypoint puts cuda-compat's libcuda first
            "compat_driver": json.dumps(stack.forward_compat[1]) if stack.forward_compat else None,
            # The spec's entrypoint, if any, runs after the check: it execs "$@".
            "exec": _exec_form((ENTRYPOINT_DEST, *(spec.entrypoint or ()))),
        },
        "env": [(k, json.dumps(v)) for k, v in spec.env],
        "labels": _labels(spec, stack, options),
    }


_COMPAT_PACKAGE_RE = re.compile(r"cuda-compat-[0-9]{1,2}-[0-9]{1,2}")


def _forward_compat(stack: Stack) -> dict[str, str] | None:
    """The cuda-compat package a forward-compatible stack needs (resolve/forward_compat.py), checked
    before it reaches the template; None for every other stack. Raises SpecError for a lock
    whose values are not a package name and a driver version."""
    if stack.forward_compat is None:
        return None
    package, driver = stack.forward_compat
    if not (_COMPAT_PACKAGE_RE.fullmatch(package) and DRIVER_RE.fullmatch(driver)):
        raise SpecError(
            f"refused forward_compat {package!r} / {driver!r} in the stack",
            hint="resolve again: the package is cuda-compat-X-Y and the driver a version such as 580.65.06",
        )
    if stack.strategy != "system-cuda":
        raise SpecError(
            f"stack {stack.id} asks for {package} but is not a system-cuda stack",
            hint="forward compatibility needs the nvidia/cuda base: resolve with --strategy system-cuda",
        )
    return {"package": package, "driver": driver, "dir": COMPAT_DIR}


def _has_project_group(spec: ImageSpec, options: RenderOptions) -> bool:
    if options.packages is not None:
        return bool(options.packages.group("project"))
    return spec.has_project_packages


def _exec_form(argv: tuple[str, ...]) -> str:
    """CMD/ENTRYPOINT in exec form: a JSON array, which Docker parses as JSON (no shell, no `$`
    expansion, one line: json.dumps escapes every control character)."""
    return json.dumps(list(argv), ensure_ascii=True)


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


def _write_lock_groups(dest: Path, packages: PackageLock | None) -> None:
    """lock/framework/requirements.txt and lock/project/requirements.txt (empty without a lock:
    such a context renders, but its install steps would find nothing to install)."""
    for group in ("framework", "project"):
        (dest / group).mkdir(parents=True)
        text = packages.requirements(group) if packages is not None else ""
        (dest / group / "requirements.txt").write_text(text, encoding="utf-8")


def _link_or_copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)  # same filesystem: no copy
    except OSError:
        shutil.copy2(src, dest)


def _copy_project(src: Path, dest: Path, outputs: tuple[Path, ...]) -> None:
    """The files `docker build src` would send (src/.dockerignore applied), less envbuilder's
    own outputs (engine/context.py), symlinks as links."""
    from envbuilder.engine.context import included_paths

    dest.mkdir(parents=True)
    for rel in included_paths(src, outputs):
        source, target = src / rel, dest / rel
        if source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source.readlink())
        elif source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _copy_wheelhouse(src: Path, dest: Path, packages: PackageLock | None) -> None:
    """The wheels of `src` that the package lock installs (every wheel without a lock): a shared
    wheelhouse holds other projects' wheels too, and each wheel in the context is an input of
    the install steps' cache keys. Raises UsageError (no wheels, a locked wheel missing)."""
    wheels = sorted(p for p in src.glob("*.whl") if p.is_file()) if src.is_dir() else []
    if not wheels:
        raise UsageError(
            f"wheelhouse {src} holds no .whl files",
            hint="fill it with `pip download --only-binary=:all: -d DIR ...`",
        )
    if packages is not None:
        locked = {
            urllib.parse.unquote(p.wheel) for p in packages.packages if p.wheel
        }  # torch-2.13.0%2Bcpu-...
        missing = sorted(locked - {urllib.parse.unquote(w.name) for w in wheels})
        if missing:
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            raise UsageError(
                f"wheelhouse {src} lacks {len(missing)} locked wheel(s): {', '.join(missing[:3])}{more}",
                hint=f"fill it from the lock: envbuilder wheelhouse LOCK {src}",
            )
        wheels = [w for w in wheels if urllib.parse.unquote(w.name) in locked]
    dest.mkdir(parents=True)
    for wheel in wheels:
        try:
            os.link(wheel, dest / wheel.name)  # same filesystem: no copy of gigabytes
        except OSError:
            shutil.copy2(wheel, dest / wheel.name)


def _swap_in(new: Path, out_dir: Path) -> None:
    """Rename `new` to `out_dir`; a previous render there is first moved to a folder of this
    process's own (a unique empty one that the rename replaces; a fixed name such as .DIR.old
    could be someone else's folder), put back if the second rename fails, else removed. After a
    SIGKILL between the two renames the previous render is left in that folder, whose name
    (envbuilder-previousrender-PID-START-XXXX) says whose it was; the next render there sweeps
    it once that process is gone (lifecycle.sweep_temp_dirs)."""
    sweep_temp_dirs(out_dir.parent)
    try:  # the folder keeps its permissions, or gets mkdir's (never mkdtemp's 0700)
        new.chmod(stat.S_IMODE(out_dir.stat().st_mode))
    except FileNotFoundError:
        new.chmod(default_mode(directory=True))
    (new / OWNER_FILE).unlink(missing_ok=True)  # the render keeps no temp folder's owner mark
    if not out_dir.exists():
        new.rename(out_dir)
        return
    old = temp_dir("previousrender", out_dir.parent, marked=False)  # empty: the rename's target
    out_dir.rename(old)
    try:
        mark_temp_dir(old)  # now sweepable once this process is gone
        new.rename(out_dir)
    except BaseException:
        (old / OWNER_FILE).unlink(missing_ok=True)
        old.rename(out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_build_context(
    spec: ImageSpec, stack: Stack, out_dir: Path, options: RenderOptions | None = None
) -> RenderedContext:
    """Write out_dir/Dockerfile and out_dir/context/ (requirements, harness, entrypoint.sh,
    wheelhouse).

    Atomic: built in a temporary sibling folder, then renamed over out_dir. An existing out_dir
    that envbuilder did not write is refused. Raises SpecError (bad value), UsageError (out_dir
    not ours, empty wheelhouse), OutputError (cannot write: the previous render stays).
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
    out_dir.parent.mkdir(parents=True, exist_ok=True)  # build/ of a default render; --out's is checked
    tmp = temp_dir("render", out_dir.parent)
    try:
        (tmp / RENDER_MARKER).write_text(f"{spec.name}\n", encoding="utf-8")
        (tmp / "Dockerfile").write_text(text, encoding="utf-8")
        context = tmp / "context"
        context.mkdir()
        _write_lock_groups(context / LOCK_DIR, options.packages)
        if spec.installer == "uv" and (not _base_provides(options) or _has_project_group(spec, options)):
            _link_or_copy(Path(uv_binary()), context / TOOLS_DIR / "uv")
        if spec.context is not None:
            _copy_project(Path(spec.base_dir) / spec.context, context / PROJECT_DIR, options.context_outputs)
        _copy_harness(context / "harness")
        entrypoint = context / ENTRYPOINT_SOURCE
        shutil.copyfile(resources.entrypoint_script(), entrypoint)
        entrypoint.chmod(0o755)  # COPY keeps the mode: the image's user runs it
        if options.wheelhouse is not None:
            _copy_wheelhouse(options.wheelhouse, context / WHEELHOUSE_DIR, options.packages)
        _swap_in(tmp, out_dir)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):  # a full disk, a folder turned read-only: not a traceback
            raise OutputError(
                f"cannot write the build context {out_dir}: {exc.strerror or exc}",
                hint="free some space or choose another folder with --out; a previous render there is kept",
            ) from exc
        raise
    return RenderedContext(
        dockerfile=out_dir / "Dockerfile",
        context_dir=out_dir / "context",
        dockerfile_sha256=sha256_text(text),
        lock_hash=lock_hash(final, spec.to_dict(), options.package_locks),
        stack=final,
    )
