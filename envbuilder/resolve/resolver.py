"""The resolver: (matrix, request, host) -> the best compatible stack, the runners-up, and a reason
for every candidate it rejected. Pure and deterministic: no I/O, no clock, no Docker.

Ranking key (survivors are sorted by this tuple, best first; see `_rank_key`):
  1. framework version, newest first (the user's specifier already bounds it);
  2. GPU coverage: stacks with native SASS for every GPU (in every kernel set that has code for
     it: resolve/coverage.py) before stacks that rely on PTX JIT;
  3. full driver support before minor-version compatibility (driver >= the toolkit driver of the
     build's CUDA, so PTX JIT and newer-driver APIs work), then driver-agnostic CPU builds last
     on GPU hosts;
  4. strategy: the requested one; otherwise `bundled` before `system-cuda` (one copy of CUDA,
     smaller image, guarded by the NVIDIA_REQUIRE_CUDA we derive from the real minimum driver);
  5. the build's CUDA version, newest first;
  6. Python, newest first (unless requested);
  7. base image: newest OS, then newest CUDA patch (one image is chosen per candidate).

A candidate whose whole install set is known not to resolve to wheels for its Python and platform
(uv's answer in generated/installable.yaml or the user's cache) is rejected as `installable`; a
set nobody checked is kept, and `installability` says "not checked" (the resolver never asks an
index).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.version import Version

from envbuilder.archs import describe, kernel_for, matrix_targets
from envbuilder.errors import UsageError
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix import framework as framework_table
from envbuilder.matrix.installable import Key, answer_key, find_answer
from envbuilder.matrix.model import (
    STRATEGIES,
    BaseImage,
    FrameworkRelease,
    FrameworkVariant,
    Matrix,
    Strategy,
)
from envbuilder.matrix.platforms import images_for, variant_for_platform
from envbuilder.platforms import DEFAULT_PLATFORM, Platform, short_name
from envbuilder.require_cuda import Properties, parse_require_cuda, require_cuda_text
from envbuilder.resolve import forward_compat
from envbuilder.resolve.coverage import compiler_gap, sass_coverage
from envbuilder.resolve.drivers import first_release, jit_floor, mvc_floor, native_cuda
from envbuilder.resolve.model import Rejection, Request, Resolution, Stack
from envbuilder.resolve.platform import effective_platform, platform_rejections
from envbuilder.resolve.wsl import wsl_warning
from envbuilder.versions import (
    driver_branch,
    is_driver_branch,
    major,
    major_minor,
    parse_cc,
    parse_specifier,
    version_matches,
)

MAX_ALTERNATIVES = 4
# Rejections whose reason does not depend on the Python version: reported once per build.
_PYTHON_INDEPENDENT = frozenset({"driver", "arch", "strategy", "known-bad", "platform", "compiler"})


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True, slots=True)
class _Candidate:
    release: FrameworkRelease
    variant: FrameworkVariant
    strategy: Strategy
    python: str
    platform: Platform = DEFAULT_PLATFORM
    archs_lent: bool = False  # the platform's arch lists were not read: linux/amd64's are taken

    def label(self) -> str:
        on = "" if self.platform == DEFAULT_PLATFORM else f" / {self.platform}"
        return (
            f"{self.release.framework} {self.release.version}+{self.variant.name} / "
            f"py{self.python} / {self.strategy}{on}"
        )


@dataclass(frozen=True, slots=True)
class _Verdict:
    stack: Stack
    sass_everywhere: bool
    full_driver: bool


class _Reject(Exception):
    def __init__(self, component: str, reason: str) -> None:
        super().__init__(reason)
        self.component, self.reason = component, reason


def python_candidates(matrix: Matrix, request: Request, strategy: Strategy) -> list[str]:
    kind = "slim" if strategy == "bundled" else "cuda"
    pythons = {b.python for b in matrix.base_images if b.kind == kind}
    if request.python:
        return [request.python]
    return sorted(pythons, key=Version, reverse=True)


def _check_gpu_support(matrix: Matrix, host: Host) -> list[Rejection]:
    if host.driver is None:
        return []
    branch = driver_branch(host.driver)
    out = []
    for g in host.gpus:
        if g.model is None:
            continue
        model = next(m for m in matrix.gpus.models if m.name == g.model)
        if model.last_branch is not None and branch > model.last_branch:
            out.append(
                Rejection(
                    candidate="every stack",
                    component="gpu-support",
                    reason=f"{g.name} is not supported by driver branch {branch} at all: its last "
                    f"driver branch is R{model.last_branch}; install an R{model.last_branch} driver",
                )
            )
        if model.first_branch is not None and branch < model.first_branch:
            out.append(
                Rejection(
                    candidate="every stack",
                    component="gpu-support",
                    reason=f"{g.name} needs driver branch R{model.first_branch} or newer; "
                    f"driver {host.driver} is too old to drive it",
                )
            )
    return out


def _pick_base(matrix: Matrix, request: Request, cand: _Candidate) -> tuple[BaseImage | None, str]:
    """The base image for a candidate, or None and why none fits."""
    v = cand.variant
    published = images_for(matrix, cand.platform)
    on = "" if published is None else f" for {cand.platform}"
    if cand.strategy == "bundled":
        pool = [b for b in matrix.base_images if b.kind == "slim" and b.python == cand.python]
        if published is not None:
            pool = [b for b in pool if b.os in published.slim_os]
        if request.os:
            pool = [b for b in pool if b.os == request.os]
        if not pool:
            where = f" on {request.os}" if request.os else ""
            return None, f"no slim base image with Python {cand.python}{where}{on}"
        return max(pool, key=lambda b: _os_version(b.os)), ""  # debian10 is newer than debian9
    assert v.cuda is not None
    pool = [
        b
        for b in matrix.base_images
        if b.kind == "cuda"
        and b.cuda is not None
        and major_minor(b.cuda) == major_minor(v.cuda)
        and b.flavor == request.flavor
        and (b.cudnn == v.needs_system_cudnn if v.needs_system_cudnn else b.cudnn is None)
    ]
    if published is not None:
        pool = [b for b in pool if b.os in published.cuda_os]
    if request.os:
        pool = [b for b in pool if b.os == request.os]
    if not pool:
        cudnn = f" with cuDNN {v.needs_system_cudnn}" if v.needs_system_cudnn else ""
        where = f" on {request.os}" if request.os else ""
        return None, f"no nvidia/cuda {major_minor(v.cuda)} {request.flavor} image{cudnn}{where}{on}"
    fitting = [b for b in pool if b.python == cand.python]
    if not fitting:
        have = ", ".join(sorted({f"{b.os} (Python {b.python})" for b in pool}))
        return None, f"no nvidia/cuda {major_minor(v.cuda)} image ships Python {cand.python}: {have}"
    return max(fitting, key=lambda b: (_os_version(b.os), Version(b.cuda or "0"))), ""


def _os_version(os_name: str) -> Version:
    """'ubuntu24.04' -> 24.04, for "newest OS first"."""
    digits = os_name.lstrip("abcdefghijklmnopqrstuvwxyz")
    return Version(digits) if digits else Version("0")


def _require_cuda_ok(matrix: Matrix, host: Host, image: BaseImage) -> tuple[bool, str]:
    """Would the Container Toolkit start this image here? Its NVIDIA_REQUIRE_CUDA (cuda>=X.Y and
    the brand/driver-branch exemptions of the matrix) for each GPU, by the one evaluator."""
    if host.driver is None or image.require_cuda is None:
        return True, ""
    native = native_cuda(matrix, host.driver)
    exemptions = tuple((r.brand, r.branch) for r in image.require_rules)
    requirement = parse_require_cuda(require_cuda_text(image.require_cuda, exemptions))
    gpus: tuple[HostGpu | None, ...] = host.gpus or (None,)
    matched = [(g, requirement.matching_term(Properties.of(native, host.driver, g))) for g in gpus]
    branch = driver_branch(host.driver)
    refused = [g for g, term in matched if term is None]
    if not refused:
        by_brand = any(f.prop == "brand" for _, term in matched for f in term or ())
        note = f"allowed by the image's forward-compatibility exemption for branch R{branch}"
        return True, note if by_brand else ""
    who = (
        ", ".join(f"{g.name} (brand={g.brand or 'unknown'})" for g in refused if g is not None) or "this host"
    )
    return False, (
        f"{image.ref} carries NVIDIA_REQUIRE_CUDA cuda>={image.require_cuda}; driver {host.driver} "
        f"supports CUDA {native} and the image exempts no such brand on branch R{branch} "
        f"for {who}: the Container Toolkit would refuse to start it (bundled strategy avoids this)"
    )


def _evaluate(matrix: Matrix, request: Request, host: Host, cand: _Candidate) -> _Verdict:
    rel, v = cand.release, cand.variant
    if cand.python not in parse_specifier(rel.python):
        raise _Reject(
            "python",
            f"Python {cand.python} is outside {rel.framework} {rel.version}'s supported range {rel.python}",
        )
    notes: list[str] = []
    if cand.archs_lent and v.cuda is not None:
        notes.append(
            f"the {cand.platform} wheels' arch lists were not read: the linux/amd64 wheels' are taken "
            "(same build configuration, UNCONFIRMED; matrices/platforms.yaml)"
        )
    gpus = host.gpus
    if v.cuda is None and cand.strategy == "system-cuda":
        raise _Reject("strategy", "a CPU-only build has no CUDA for a system-cuda image")
    min_driver: str | None = None
    full_driver = True
    sass_everywhere = True
    fwd_floor: tuple[str, str] | None = None  # (floor, reason) a driver below it needs cuda-compat for
    fwd: forward_compat.ForwardCompat | None = None
    jit_cuda: str | None = None  # the CUDA X.Y whose driver a PTX-only GPU needs (its ISA's)
    if v.cuda is not None:
        # Each floor with the reason a driver below it fails; the highest one binds.
        floors = [(mvc_floor(matrix, v.cuda), f"minor-version-compatibility floor of CUDA {major(v.cuda)}.x")]
        if v.min_driver:
            floors.append((v.min_driver, f"{rel.framework} {v.name}'s own floor"))
        toolkit_driver = first_release(matrix, v.cuda).min_driver
        for g in gpus:
            kernel = kernel_for(parse_cc(g.cc), matrix_targets(v.sass, v.ptx))
            if kernel is None:
                raise _Reject(
                    "arch",
                    f"no kernels for {g.name} (sm_{g.cc.replace('.', '')}): the {_build_on(cand)} has "
                    + describe(matrix_targets(v.sass, v.ptx)),
                )
            jit = kernel if kernel.kind == "ptx" else None
            partial = ""
            if jit is None and v.kernel_sets:  # SASS for this GPU in only some kernel sets?
                cover = sass_coverage(v.kernel_sets, parse_cc(g.cc))
                if cover.partial:
                    jit = kernel_for(parse_cc(g.cc), matrix_targets((), v.ptx))
                    partial = f"{g.name} has SASS in {cover.share()} of this build: "
            bad = _known_bad(matrix, rel, v, g, "ptx" if jit is not None else kernel.kind)
            if bad is not None:
                raise _Reject("known-bad", bad)
            if v.compiler is not None and (gap := compiler_gap(matrix, v.compiler, g.cc)) is not None:
                said = (
                    f"{rel.framework} {rel.version}'s XLA compiles kernels at run time and cannot "
                    f"target {g.name}: {gap}"
                )
                if v.compiler.runs == "always":
                    raise _Reject("compiler", said)
                notes.append(
                    f"{said}; XLA runs only where asked (jit_compile=True, Keras 3's "
                    "jit_compile='auto'): use jit_compile=False on this GPU"
                )
            if jit is not None:
                sass_everywhere = False
                if partial:
                    notes.append(f"{partial}the rest runs through PTX JIT (slow first start)")
                else:
                    notes.append(f"{g.name} runs this build through PTX JIT (slow first start)")
                floor, why, jit_cuda = _jit_floor(matrix, v, g, jit.name, toolkit_driver, partial)
                floors.append((floor, why))
                if "PTX ISA not read" in why:
                    notes.append(why)
        floor, why = max(floors, key=lambda f: Version(f[0]))
        min_driver = floor
        if host.driver is not None:
            if Version(host.driver) < Version(floor):
                reason = _driver_reason(matrix, request, host, v, floor, why, gpus)
                if not (request.forward_compat and gpus and not forward_compat.ineligible_gpus(matrix, gpus)):
                    raise _Reject("driver", reason)
                if cand.strategy != "system-cuda":
                    raise _Reject(
                        "driver",
                        f"{reason}; forward compatibility needs the cuda-compat package, which the "
                        "nvidia/cuda base of the system-cuda strategy carries (--strategy system-cuda)",
                    )
                fwd_floor = (floor, reason)
            elif Version(host.driver) < Version(toolkit_driver):
                full_driver = False
                notes.append(
                    f"driver {host.driver} runs CUDA {v.cuda} builds through minor-version "
                    f"compatibility (limited feature set; full support from {toolkit_driver})"
                )
    if cand.strategy == "bundled" and not v.bundled_packages:
        raise _Reject("strategy", f"{rel.framework} {rel.version} publishes no wheels that bundle CUDA")
    if cand.strategy == "system-cuda" and not v.system_packages:
        raise _Reject("strategy", f"{rel.framework} {rel.version} has no build for a system CUDA")
    packages = v.system_packages if cand.strategy == "system-cuda" else v.bundled_packages
    key = install_key(packages, v.companion_packages, v.index_url, cand.python, cand.platform)
    answer = find_answer(matrix, key)
    if answer is not None and not answer.ok:
        raise _Reject("installable", f"{answer.why} ({answer.source})")
    image, why = _pick_base(matrix, request, cand)
    if image is None:
        raise _Reject("base-image", why)
    if fwd_floor is not None:
        assert host.driver is not None
        got = forward_compat.through_image(matrix, image, host.driver, fwd_floor[0], gpus)
        if isinstance(got, str):
            raise _Reject("driver", f"{fwd_floor[1]}; {got}")
        fwd, min_driver = got, got.min_driver
        notes.append(got.note)
    if cand.strategy == "system-cuda":
        ok, detail = _require_cuda_ok(matrix, host, image)
        if not ok:
            raise _Reject("require-cuda", detail)
        if detail:
            notes.append(detail)
        if not v.uses_system_cuda:
            notes.append(
                f"{rel.framework} wheels bring their own CUDA libraries: the image's CUDA runtime "
                "is a second copy (the bundled strategy avoids it)"
            )
        require = image.require_cuda
    elif v.cuda is not None:
        # The toolkit checks the driver's own CUDA version: X.0 is what the MVC floor of the major
        # reports; a GPU that needs PTX JIT needs the build's X.Y itself.
        require = (jit_cuda or major_minor(v.cuda)) if not sass_everywhere else f"{major(v.cuda)}.0"
    else:
        require = None
    stack = _make_stack(cand, image, min_driver, require, tuple(notes))
    if fwd is not None:
        stack = replace(stack, forward_compat=(fwd.package, fwd.driver))
    return _Verdict(stack=stack, sass_everywhere=sass_everywhere, full_driver=full_driver)


def _build_on(cand: _Candidate) -> str:
    """'build', or 'linux/arm64 build' where the arch lists are that platform's own wheels'."""
    return "build" if cand.platform == DEFAULT_PLATFORM else f"{cand.platform} build"


def install_key(
    packages: tuple[str, ...],
    companions: tuple[tuple[str, str], ...],
    index_url: str | None,
    python: str,
    platform: Platform = DEFAULT_PLATFORM,
) -> Key:
    """The install set of a stack (the framework with its extras, then its companions, as a build
    installs them) for `python` on `platform`: the key of uv's answers."""
    return answer_key((*packages, *(req for _, req in companions)), index_url, python, platform)


def installability(matrix: Matrix, stack: Stack) -> str:
    """What is known of `stack`'s install set resolving to wheels: "resolves (SOURCE)", or
    "not checked: ..." when nobody answered (the resolver keeps such a stack: it never guesses)."""
    key = install_key(stack.packages, stack.companions, stack.index_url, stack.python, stack.platform)
    answer = find_answer(matrix, key)
    if answer is not None:
        return f"resolves ({answer.source})" if answer.ok else f"does not resolve: {answer.why}"
    where = f" from {stack.index_url}" if stack.index_url else ""
    return (
        f"not checked: no known answer for {', '.join(key[0])}{where} on Python {stack.python} "
        f"{key[3]} (`envbuilder matrix installable` asks uv and remembers the answer)"
    )


def _jit_floor(
    matrix: Matrix, v: FrameworkVariant, g: HostGpu, kernel: str, toolkit_driver: str, partial: str = ""
) -> tuple[str, str, str | None]:
    """(driver floor, why, CUDA X.Y) for a GPU that runs `v` (or, `partial`, the kernel sets its
    SASS leaves out) through its PTX `kernel`: the driver must JIT-compile the PTX's ISA
    (ptx_isa.yaml); when the ISA was not read from the wheel, the build's CUDA is assumed to have
    written it."""
    sm = f"sm_{g.cc.replace('.', '')}"
    found = jit_floor(matrix, v.ptx_isa) if v.ptx_isa else None
    if found is not None:
        cuda, driver = found
        which = "which has no SASS in it" if not partial else "for the kernel sets without its SASS"
        return (
            driver,
            (
                f"{partial}the driver must JIT-compile the build's PTX ({kernel}, PTX ISA {v.ptx_isa}, "
                f"introduced by CUDA {cuda}) for {g.name} ({sm}), {which}"
            ),
            cuda,
        )
    assert v.cuda is not None
    return (
        toolkit_driver,
        (
            f"{partial}PTX ISA not read from the wheels: {kernel} for {g.name} ({sm}) is assumed to need the "
            f"driver of the build's CUDA {major_minor(v.cuda)} to JIT"
        ),
        major_minor(v.cuda),
    )


def _known_bad(
    matrix: Matrix, rel: FrameworkRelease, v: FrameworkVariant, g: HostGpu, how: str
) -> str | None:
    """The reason (with its reports) when known_bad.yaml says this build fails on this GPU."""
    for bad in matrix.known_bad:
        if bad.framework != rel.framework or g.cc not in bad.ccs:
            continue
        if bad.variants and v.name not in bad.variants:
            continue
        if not parse_specifier(bad.versions).contains(rel.version, prereleases=True):
            continue
        if bad.path == "ptx" and how != "ptx":
            continue
        return f"{bad.reason}: {g.name} (sm_{g.cc.replace('.', '')}); reported in {', '.join(bad.issues)}"
    return None


def _driver_reason(
    matrix: Matrix,
    request: Request,
    host: Host,
    v: FrameworkVariant,
    floor: str,
    why: str,
    gpus: tuple[HostGpu, ...],
) -> str:
    assert v.cuda is not None and host.driver is not None
    reason = f"driver {host.driver} < {floor} needed by this CUDA {major_minor(v.cuda)} build ({why})"
    fwd_ok = bool(gpus) and not forward_compat.ineligible_gpus(matrix, gpus)
    if fwd_ok and not request.forward_compat:
        reason += (
            "; forward compatibility (cuda-compat) could apply on this data-center GPU (--forward-compat)"
        )
    elif request.forward_compat and gpus and not fwd_ok:
        reason += "; " + forward_compat.not_applicable(matrix, gpus)
    elif not fwd_ok:
        reason += "; forward compatibility (cuda-compat) does not apply to this GPU class"
    return reason


def _make_stack(
    cand: _Candidate, image: BaseImage, min_driver: str | None, require: str | None, notes: tuple[str, ...]
) -> Stack:
    rel, v = cand.release, cand.variant
    if cand.strategy == "system-cuda":
        base = f"cuda{image.cuda}-{image.flavor}-{image.os}"
        sid = f"{rel.framework}{rel.version}-{v.name}-py{cand.python}-{base}"
        packages = v.system_packages
    else:
        sid = f"{rel.framework}{rel.version}-{v.name}-py{cand.python}-bundled-{image.os}"
        packages = v.bundled_packages
    if cand.platform != DEFAULT_PLATFORM:  # linux/amd64 ids stay as they were before the axis
        sid += f"-{short_name(cand.platform)}"
    return Stack(
        id=sid,
        framework=rel.framework,
        version=rel.version,
        variant=v.name,
        cuda=v.cuda,
        cudnn=v.cudnn,
        nccl=v.nccl,
        python=cand.python,
        base_image=image.ref,
        os=image.os,
        strategy=cand.strategy,
        flavor=image.flavor,
        min_driver=min_driver,
        require_cuda=f"cuda>={require}" if require else None,
        sass=v.sass,
        ptx=v.ptx,
        index_url=v.index_url,
        packages=packages,
        companions=v.companion_packages,
        python_install=image.python_install,
        notes=notes,
        platform=cand.platform,
    )


def _rank_key(verdict: _Verdict, request: Request) -> tuple[object, ...]:
    s = verdict.stack
    strategy_pref = 0 if (request.strategy or "bundled") == s.strategy else 1
    return (
        Version(s.version),
        verdict.sass_everywhere,
        verdict.full_driver,
        -strategy_pref,
        Version(s.cuda) if s.cuda else Version("0"),
        Version(s.python),
        s.id,
    )


# --------------------------------------------------------------------------- public API


def resolve(matrix: Matrix, request: Request, host: Host) -> Resolution:
    """Enumerate every candidate stack for `request` on `host`, reject each that cannot work (with
    its reason), and rank the rest by the key in the module docstring.

    Raises UsageError for a malformed or impossible request (no release matches the specifier,
    unknown framework or strategy). An empty result is not an error here: `stack` is None and
    `rejected` says why (the CLI raises model.NoCompatibleStackError with it).
    """
    table = framework_table(matrix, request.framework)
    spec = parse_specifier(request.specifier, f"{request.framework} requirement")
    releases = [r for r in table.releases if spec.contains(r.version, prereleases=True)]
    if not releases:
        known = ", ".join(r.version for r in table.releases[-6:])
        raise UsageError(
            f"no {request.framework} release matches {request.requirement!r}",
            hint=_wildcard_hint(request, table.releases)
            or f"envbuilder knows {request.framework} {table.releases[0].version} .. "
            f"{table.releases[-1].version} (newest: {known})",
        )
    if request.strategy is not None and request.strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {request.strategy!r}", hint="use system-cuda or bundled")
    warnings: list[str] = []
    if not host.gpus and not request.cpu_only:
        warnings.append(
            "no GPU on this host or given: resolving a CPU-only stack "
            "(give --driver and --gpu/--cc to resolve for a GPU host)"
        )
        request = replace(request, cpu_only=True)
    if host.gpus and host.driver is None:
        warnings.append("no driver given: driver compatibility was not checked (give --driver)")
    if (wsl := wsl_warning(matrix, host)) is not None:
        warnings.append(wsl)
    if host.driver is not None and is_driver_branch(host.driver):
        warnings.append(
            f"driver given as branch R{host.driver}: checked as its oldest driver ({host.driver}.0.0), "
            "the most conservative answer; give the full version (e.g. from nvidia-smi) for an exact one"
        )
    platform, inferred = effective_platform(matrix, request, host)
    request = replace(request, platform=platform)
    if inferred is not None:
        warnings.append(inferred)
    rejected = _check_gpu_support(matrix, host) + platform_rejections(matrix, platform, host)
    survivors: list[_Verdict] = []
    if not rejected:
        strategies = [request.strategy] if request.strategy else list(STRATEGIES)
        for rel in reversed(releases):
            for listed in rel.variants:
                if (listed.cuda is None) != request.cpu_only:
                    continue  # CPU builds on GPU hosts (and CUDA builds with --cpu) are not candidates
                got = variant_for_platform(matrix, platform, rel, listed)
                if isinstance(got, str):
                    label = f"{rel.framework} {rel.version}+{listed.name} / any Python / {platform}"
                    rejected.append(Rejection(candidate=label, component="platform", reason=got))
                    continue
                v, build = got
                for strategy in strategies:
                    for py in python_candidates(matrix, request, strategy):
                        if request.python is None and py not in parse_specifier(rel.python):
                            continue  # not a candidate at all, nothing to explain
                        # x86_64's lists taken without an aarch64 wheel read to check them: said in a note
                        lent = build is not None and build.archs_from_default and not build.wheels
                        cand = _Candidate(rel, v, strategy, py, platform, lent)
                        wheels_for = build.python if build is not None else None  # the platform's own range
                        if wheels_for and py not in parse_specifier(wheels_for):
                            if request.python is None or (v.cuda is None and strategy == "system-cuda"):
                                continue  # not a candidate (a CPU build has no system-cuda one either)
                            # --python outside the platform's wheels: said, as outside the release's range
                            reason = (
                                f"Python {py} is outside the range of {rel.framework} {rel.version}'s "
                                f"{platform} wheels {wheels_for}"
                            )
                            # never a repeat: the label names the release, build, strategy and
                            # Python, and the loop's only Python is the one given
                            rejected.append(
                                Rejection(candidate=cand.label(), component="python", reason=reason)
                            )
                            continue
                        try:
                            survivors.append(_evaluate(matrix, request, host, cand))
                        except _Reject as r:
                            if r.component == "strategy" and v.cuda is None:
                                continue  # (and so is every other Python of this build and strategy)
                            label = cand.label()
                            if r.component in _PYTHON_INDEPENDENT:
                                label = label.replace(f" / py{py} / ", " / any Python / ")
                            rejection = Rejection(candidate=label, component=r.component, reason=r.reason)
                            if rejection not in rejected:
                                rejected.append(rejection)
    survivors.sort(key=lambda verdict: _rank_key(verdict, request), reverse=True)
    best = survivors[0].stack if survivors else None
    alternatives: list[Stack] = []
    seen = {(best.version, best.variant, best.strategy)} if best else set()
    for verdict in survivors[1:]:
        s = verdict.stack
        if (s.version, s.variant, s.strategy) in seen:
            continue
        seen.add((s.version, s.variant, s.strategy))
        alternatives.append(s)
        if len(alternatives) == MAX_ALTERNATIVES:
            break
    return Resolution(
        request=request,
        host=host,
        stack=best,
        alternatives=tuple(alternatives),
        rejected=tuple(rejected),
        warnings=tuple(warnings),
    )


def _wildcard_hint(request: Request, releases: tuple[FrameworkRelease, ...]) -> str | None:
    """For a pin like 'tensorflow==2.16' that matches no release while 2.16.x exist: suggest
    '==2.16.*' (PEP 440 reads ==2.16 as exactly 2.16.0)."""
    spec = request.specifier.strip()
    if not spec.startswith("==") or spec.endswith("*") or "," in spec:
        return None
    prefix = spec[2:].strip()
    try:
        line = [r.version for r in releases if version_matches(prefix, r.version)]
    except UsageError:
        return None
    if not line:
        return None
    return (
        f"'=={prefix}' means exactly {prefix}.0 (PEP 440); for the {prefix} line write "
        f"'{request.framework}=={prefix}.*' (releases {', '.join(line)})"
    )
