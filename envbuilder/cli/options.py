"""Options shared by several subcommands: the host (detected or given) and the request."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from envbuilder import frameworks
from envbuilder.errors import UsageError
from envbuilder.platforms import Platform, parse_platform
from envbuilder.resolve.model import Request
from envbuilder.versions import MAX_REQUIREMENT, parse_python_xy, quote_input

if TYPE_CHECKING:  # image.* reads YAML: not loaded by commands that need no spec
    from envbuilder.image.packages import LockSettings

F = TypeVar("F", bound=Callable[..., Any])


def gpu_access_option(func: F) -> F:
    """--gpu-access, shared by certify and run so an image runs the way it was certified; its
    choices are the registered runtimes' modes (envbuilder/runtime)."""
    from envbuilder.runtime import gpu_access_choices, modes_of

    per_runtime = "; ".join(f"{name}: {', '.join(modes)}" for name, modes in modes_of().items())
    return click.option(
        "--gpu-access",
        type=click.Choice(gpu_access_choices()),
        default="auto",
        show_default=True,
        help="How the container gets the GPUs: auto picks the runtime's first mode this host offers, "
        f"else none (CPU). The modes, in auto's order: {per_runtime}.",
    )(func)


def jit_cache_option(func: F) -> F:
    """--jit-cache/--no-jit-cache, shared by certify and run (certify/jit_cache.py)."""
    return click.option(
        "--jit-cache/--no-jit-cache",
        default=True,
        show_default=True,
        help="Keep the CUDA driver's JIT cache and the frameworks' compile caches (torch.compile's "
        "Inductor and Triton, JAX's) in a volume of this image's own (envbuilder-cuda-jit-*-ID; "
        "Apptainer and enroot: a folder of yours, ENVBUILDER_CACHE_DIR/volumes/...), "
        "so what one container compiled the next loads instead of compiling again; "
        "--no-jit-cache starts them empty, as a fresh container does.",
    )(func)


def runtime_option(help_text: str) -> Callable[[F], F]:
    """--runtime: the container runtime, one of the registry's (envbuilder/runtime), docker by
    default."""
    from envbuilder.runtime import DEFAULT, names

    return click.option(
        "--runtime", type=click.Choice(names()), default=DEFAULT, show_default=True, help=help_text
    )


def check_platform(ctx: click.Context, param: click.Parameter, value: str | None) -> Platform | None:
    """--platform: linux/amd64 or linux/arm64 (x86_64, amd64, aarch64, arm64 read as those)."""
    return None if value is None else parse_platform(value, _option_name(param))


def host_options(func: F) -> F:
    """--driver, --gpu (repeatable), --cc (repeatable): describe a host instead of probing this one;
    --platform: the machine the stack is for (default: the host's own)."""
    func = click.option(
        "--platform",
        metavar="PLATFORM",
        callback=check_platform,
        help="Target platform: linux/amd64 or linux/arm64 (x86_64 and aarch64 accepted). Default: this "
        "host's own (uname -m); for a host given by --gpu, the platform those GPUs exist in (GH200, "
        "GB10, Jetson Thor, T4G: linux/arm64), else linux/amd64.",
    )(func)
    func = click.option(
        "--cc",
        "ccs",
        multiple=True,
        metavar="X.Y",
        help="Compute capability of a target GPU (repeatable; every GPU must be served).",
    )(func)
    func = click.option(
        "--gpu",
        "gpus",
        multiple=True,
        metavar="NAME",
        help="Target GPU by the name nvidia-smi prints or a short form that fits one model, e.g. "
        '"Tesla V100-SXM2-16GB", "A100", "RTX 4090" (repeatable).',
    )(func)
    func = click.option(
        "--driver",
        metavar="VERSION",
        help="Target NVIDIA driver as nvidia-smi prints it, e.g. 535.104.05, 550.135 or 580.00, or a "
        "bare branch such as 580 (its oldest driver is assumed). Default: this host's.",
    )(func)
    return func


def request_options(func: F) -> F:
    """--framework, --python, --strategy, --os, --flavor, --cpu, --forward-compat."""
    options = [
        click.option(
            "--forward-compat",
            is_flag=True,
            help="Allow CUDA forward compatibility (cuda-compat) on data-center GPUs with system-cuda.",
        ),
        click.option("--cpu", "cpu_only", is_flag=True, help="Resolve a CPU-only stack."),
        click.option(
            "--flavor",
            type=click.Choice(["runtime", "devel", "base"]),
            default="runtime",
            show_default=True,
            help="nvidia/cuda image flavor for the system-cuda strategy.",
        ),
        click.option("--os", "os_name", metavar="OS", help="Base OS, e.g. ubuntu24.04 or debian12."),
        click.option(
            "--strategy",
            type=click.Choice(["system-cuda", "bundled"]),
            default=None,
            help="system-cuda: nvidia/cuda base with system CUDA; bundled: slim base + the "
            "framework's own CUDA wheels. Default: consider both, prefer bundled.",
        ),
        click.option("--python", metavar="X.Y", help="CPython version (default: newest that fits)."),
        click.option(
            "--framework",
            "framework_req",
            default=frameworks.DEFAULT,
            show_default=True,
            metavar="REQ",
            help="Framework requirement: 'torch==2.11.*', 'tensorflow>=2.16', 'jax'.",
        ),
    ]
    for opt in options:
        func = opt(func)
    return func


# A PEP 508 name followed by nothing but version specifiers: the usual `--framework` value. It is
# read with packaging.specifiers alone; anything else (extras, markers, URLs, parentheses) goes to
# packaging.requirements, whose import (markers -> tags -> logging, subprocess, sysconfig) costs
# about 20 ms of a 250 ms `envbuilder resolve`. Both give the same name and specifier.
_NAME_AND_SPECIFIERS = re.compile(
    r"\s*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])\s*([<>=!~][^\[\];@()]*)?", re.ASCII
)
_REQUIREMENT_HINT = "write it as NAME[SPECIFIER], e.g. 'torch==2.11.*' or 'tensorflow>=2.16'"


def parse_framework_requirement(text: str) -> tuple[str, str]:
    """'torch==2.11.*' -> ('torch', '==2.11.*'). Raises UsageError for a malformed requirement
    and for one with extras, a URL or a marker (the resolver chooses the CUDA variant)."""
    if len(text) > MAX_REQUIREMENT:  # packaging would meet a 5000-digit version as a bare ValueError
        raise UsageError(
            f"framework requirement {quote_input(text)} is longer than {MAX_REQUIREMENT} characters",
            hint=_REQUIREMENT_HINT,
        )
    plain = _NAME_AND_SPECIFIERS.fullmatch(text)
    if plain is not None:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            return plain.group(1).lower(), str(SpecifierSet(plain.group(2) or ""))
        except InvalidSpecifier as exc:
            raise UsageError(
                f"malformed framework requirement {quote_input(text)}", hint=_REQUIREMENT_HINT
            ) from exc

    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(
            f"malformed framework requirement {quote_input(text)}", hint=_REQUIREMENT_HINT
        ) from exc
    if req.extras or req.url or req.marker:
        raise UsageError(
            f"framework requirement {text!r} may only name a framework and versions",
            hint="extras and CUDA variants are chosen by the resolver",
        )
    return req.name.lower(), str(req.specifier)


def request_from_options(
    framework_req: str,
    python: str | None,
    strategy: str | None,
    os_name: str | None,
    flavor: str,
    cpu_only: bool,
    forward_compat: bool,
    platform: Platform | None = None,
) -> Request:
    """Parse the request options. Raises UsageError for a malformed requirement or version."""
    name, specifier = parse_framework_requirement(framework_req)
    if python is not None:
        python = parse_python_xy(python)
    return Request(
        framework=name,
        specifier=specifier,
        python=python,
        strategy=strategy,  # type: ignore[arg-type]
        os=os_name,
        flavor=flavor,  # type: ignore[arg-type]
        forward_compat=forward_compat,
        cpu_only=cpu_only,
        platform=platform,
    )


def trust_options(func: F) -> F:
    """--key (repeatable), --trust, --max-age: the trust policy for signed attestations (verify,
    run). Default: DATA/trust.yaml, else your own keys (docs/trust.md)."""
    func = click.option(
        "--max-age",
        metavar="DURATION",
        help="Refuse certificates issued longer ago than this (30d, 12h, 90m); overrides the policy's.",
    )(func)
    func = click.option(
        "--trust",
        "trust_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Trust policy file (YAML: keys, per-repository patterns, max_age). Default: DATA/trust.yaml.",
    )(func)
    func = click.option(
        "--key",
        "key_files",
        multiple=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="Trust exactly this PEM public key (repeatable), for every repository.",
    )(func)
    return func


def passphrase_prompt(name: str) -> bytes | None:
    """ENVBUILDER_KEY_PASSPHRASE, else ask on a terminal, else None (the caller then refuses)."""
    import os
    import sys

    from envbuilder.attest.keys import PASSPHRASE_ENV

    if os.environ.get(PASSPHRASE_ENV):
        return os.environ[PASSPHRASE_ENV].encode("utf-8")
    if not sys.stdin.isatty():
        return None
    return str(click.prompt(f"passphrase for key {name}", hide_input=True, err=True)).encode("utf-8")


def say(message: str) -> None:
    """A progress line on stderr (results go to stdout, so --json pipes cleanly)."""
    click.echo(message, err=True)


def package_source_options(func: F) -> F:
    """--index-url, --framework-index, --find-links (repeatable), --no-index: where `lock`, `build`
    and `wheelhouse` resolve Python packages from (for the stack's platform: host_options)."""
    options = [
        click.option("--no-index", is_flag=True, help="Resolve only from --find-links folders (offline)."),
        click.option(
            "--find-links",
            "find_links",
            multiple=True,
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            help="A folder of wheels searched first (repeatable), e.g. a wheelhouse.",
        ),
        click.option(
            "--framework-index",
            metavar="URL",
            help="Mirror of the framework's own index (e.g. download.pytorch.org/whl/cu130).",
        ),
        click.option("--index-url", metavar="URL", help="Mirror of PyPI (the default index)."),
    ]
    for opt in options:
        func = opt(func)
    return func


def settings_from_options(
    index_url: str | None, framework_index: str | None, find_links: tuple[Path, ...], no_index: bool
) -> LockSettings | None:
    """The lock settings the options ask for; None when none was given (the defaults apply).

    Raises UsageError for an index URL that is not https:// (loopback http:// is allowed).
    """
    from envbuilder.image.packages import LockSettings
    from envbuilder.image.sources import INDEX_URL_RE

    for name, url in (("--index-url", index_url), ("--framework-index", framework_index)):
        if url is not None and not INDEX_URL_RE.fullmatch(url):
            raise UsageError(
                f"{name} {url!r} is not an index URL",
                hint="an https:// URL without credentials (pass a token as an index secret)",
            )
    if index_url is None and framework_index is None and not find_links and not no_index:
        return None
    return LockSettings(
        default_index=index_url,
        framework_index=framework_index,
        find_links=find_links,
        no_index=no_index,
    )


# ---------------------------------------------------------------------- parse-time checks
# click callbacks: a bad value is refused while the command line is read, before anything is
# resolved or built (raised as UsageError, so it prints as `envbuilder: error:` with exit 2).


def check_tags(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """--tag REF (repeatable): Docker's reference grammar (envbuilder.imageref)."""
    from envbuilder.imageref import check_tag

    return tuple(check_tag(v, _option_name(param)) for v in value)


def check_registry_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--push REGISTRY: HOST[:PORT][/PREFIX] (envbuilder.imageref)."""
    from envbuilder.imageref import check_registry

    return None if value is None else check_registry(value, _option_name(param))


def check_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A duration in seconds: a finite number above 0 (click's FloatRange lets nan through)."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(
            f"{_option_name(param)} {value!r}: give a number of seconds above 0",
            hint="e.g. 600; leave the option out for the default",
        )
    return value


def _option_name(param: click.Parameter) -> str:
    opts = getattr(param, "opts", None) or [param.name or "?"]
    return str(max(opts, key=len))
