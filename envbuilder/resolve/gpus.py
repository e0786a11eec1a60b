"""GPU models by the names people and NVML give them, and a host's GPUs filled in from the matrix.

One matching rule (`lookup_gpu`), tried in order, each step answering only when it is sure:
  1. a name of the matrix as given (name, NVML name or alias; case and spacing aside);
  2. the same name with punctuation, spacing and the words NVIDIA / GeForce / Tesla aside
     ("RTX 4090" is "NVIDIA GeForce RTX 4090", "A100" is "NVIDIA A100", "H100SXM" is "H100 SXM");
  3. every word given is a word of one model's name ("V100 SXM2", "RTX 4090 Laptop").
A name nvidia-smi prints in another setting is first brought back to its board: a MIG instance
("NVIDIA H100 80GB HBM3 MIG 1g.10gb") is its parent GPU, a vGPU profile ("GRID A100-40C",
"NVIDIA A10-24Q", "NVIDIA H100XM-80C") the board it slices; both keep the board's compute capability.
A step that fits several models of one compute capability accepts them and says so (what the
resolver checks is the same for all); several of different capabilities are listed and refused
(exit 2). A name that fits nothing is refused with the nearest names as "did you mean" (difflib):
a different model is never picked, since a wrong GPU gives a confidently wrong stack.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from dataclasses import dataclass, replace

from envbuilder.errors import UsageError
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix.model import GpuModel, Matrix
from envbuilder.versions import parse_cc, quote_input

# Words that NVML adds or drops across drivers and SKUs, and that people leave out.
_FILLER = frozenset({"nvidia", "geforce", "tesla"})
_WORD = re.compile(r"[0-9a-z]+")
_LISTED = 8  # candidates named in an "ambiguous" error
_SUGGESTED = 3  # names offered as "did you mean"
# nvidia-smi's name of a MIG instance: the parent's name + " MIG " + the profile (NVIDIA MIG user
# guide, "Supported MIG Profiles": 1g.10gb, 1g.10gb+me, 3g.40gb, 7g.80gb, 1c.3g.40gb ...).
_MIG_RE = re.compile(
    r"^(?P<board>.+?)\s+MIG\s+(?P<profile>(?:\d+c\.)?\d+g\.\d+gb(?:\+[a-z]+)?)$", re.IGNORECASE
)
# A vGPU profile as the guest's nvidia-smi prints it: GRID/NVIDIA + board + "-" + frame buffer in GB
# + series (A, B, C compute, Q workstation) (NVIDIA Virtual GPU Software user guide, "Virtual GPU
# Types"): "GRID T4-16C", "NVIDIA A100-40C", "NVIDIA A10-24Q". Board codes add a letter or two for
# the SKU ("A100D", "A100DX", "H100XM", "H100L"): they are dropped when the code alone fits nothing.
# NVML's name of a MIG device handle, and `nvidia-smi -L`'s, is the profile alone ("MIG 1g.10gb"):
# the same profile exists on GPUs of different compute capabilities (1g.10gb: A100 80GB and H100).
_BARE_MIG_RE = re.compile(r"^MIG\s+(?:\d+c\.)?\d+g\.\d+gb(?:\+[a-z]+)?$", re.IGNORECASE)
_VGPU_RE = re.compile(
    r"^(?:GRID|NVIDIA)\s+(?P<board>[A-Z]+[0-9]+[A-Z]*)-(?P<size>[0-9]+)(?P<series>[ABCQ])$", re.IGNORECASE
)
_VGPU_BOARD_SUFFIX = re.compile(r"(?<=[0-9])(?:XM|DX|D|X|L|S)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GpuMatch:
    model: GpuModel
    name: str  # the NVML name that matched, else the model's name
    # several models of one compute capability fit (all their names, sorted): `model` is the first
    candidates: tuple[str, ...] = ()
    setting: str = ""  # "MIG instance 1g.10gb of ...", "vGPU profile ... of ...": what the name was read as


@dataclass(frozen=True, slots=True)
class _Words:
    joined: dict[str, frozenset[str]]  # words without fillers, joined -> model names
    words: tuple[tuple[frozenset[str], str], ...]  # (words of one name, model name)
    by_name: dict[str, GpuModel]


def _words(name: str) -> tuple[str, ...]:
    """'NVIDIA GeForce RTX 4090 Laptop GPU' -> ('rtx', '4090', 'laptop', 'gpu'). NFKC folds
    full-width letters and digits into ASCII, so a name pasted from a wide font still matches."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return tuple(w for w in _WORD.findall(text) if w not in _FILLER)


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


@functools.lru_cache(maxsize=4)
def _exact_index(models: tuple[GpuModel, ...]) -> dict[str, tuple[GpuModel, str]]:
    """Step 1's index (cheap; NVML's own names, the common case, stop here)."""
    exact: dict[str, tuple[GpuModel, str]] = {}
    for m in models:
        for n in (m.name, *m.nvml_names, *m.aliases):
            exact[_key(n)] = (m, n if n in m.nvml_names else m.name)  # an alias shows as the model
    return exact


@functools.lru_cache(maxsize=4)
def _word_index(models: tuple[GpuModel, ...]) -> _Words:
    """Steps 2 and 3's index."""
    joined: dict[str, set[str]] = {}
    words: list[tuple[frozenset[str], str]] = []
    for m in models:
        for n in (m.name, *m.nvml_names, *m.aliases):
            w = _words(n)
            joined.setdefault("".join(w), set()).add(m.name)
            words.append((frozenset(w), m.name))
    return _Words(
        joined={k: frozenset(v) for k, v in joined.items()},
        words=tuple(words),
        by_name={m.name: m for m in models},
    )


def lookup_gpu(matrix: Matrix, name: str) -> GpuMatch:
    """The GPU model `name` stands for, by the rule in the module docstring.

    Raises UsageError listing the candidates when several models of different compute
    capabilities fit, and UsageError with the nearest names ("did you mean") when none does.
    """
    match = find_gpu(matrix, name)
    if match is None:
        near = suggest_gpus(matrix, name)
        did_you_mean = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        raise UsageError(
            f"unknown GPU {quote_input(name)}: no known model has that name",
            hint=f"{did_you_mean}give the name nvidia-smi prints (nvidia-smi --query-gpu=name "
            f"--format=csv,noheader); `envbuilder matrix list gpus` lists the "
            f"{len(matrix.gpus.models)} known models; or give the compute capability with --cc X.Y",
        )
    return match


def find_gpu(matrix: Matrix, name: str) -> GpuMatch | None:
    """`lookup_gpu` that answers None when no model fits. Raises UsageError listing the
    candidates when several models of different compute capabilities do."""
    match = _find_board(matrix, name)
    if match is not None:
        return match
    setting = _setting_form(name)
    if setting is None:
        return None
    for board, what in setting:
        match = _find_board(matrix, board)
        if match is not None:
            return GpuMatch(
                model=match.model,
                name=name,
                candidates=match.candidates,
                setting=f"{what} of {match.model.name}",
            )
    return None


def _setting_form(name: str) -> list[tuple[str, str]] | None:
    """The board names a MIG instance or vGPU profile name stands for, each with what the name
    was read as; None for any other name. Raises UsageError for a MIG profile without its GPU."""
    text = " ".join(unicodedata.normalize("NFKC", name).split())
    if _BARE_MIG_RE.match(text):
        raise UsageError(
            f"GPU {quote_input(name)} names a MIG instance's profile but not its GPU",
            hint="give the GPU's name as nvidia-smi --query-gpu=name prints it (e.g. 'NVIDIA H100 80GB "
            "HBM3 MIG 1g.10gb'), or the compute capability with --cc X.Y: one profile exists on GPUs "
            "of different capabilities (1g.10gb on the A100 80GB, 8.0, and the H100, 9.0)",
        )
    if m := _MIG_RE.match(text):
        return [(m.group("board"), f"MIG instance {m.group('profile')}")]
    if m := _VGPU_RE.match(text):
        board = m.group("board")
        what = f"vGPU profile {board}-{m.group('size')}{m.group('series').upper()}"
        boards = [board]
        if (short := _VGPU_BOARD_SUFFIX.sub("", board)) != board:
            boards.append(short)
        return [(f"NVIDIA {b}", what) for b in boards]
    return None


def _find_board(matrix: Matrix, name: str) -> GpuMatch | None:
    hit = _exact_index(matrix.gpus.models).get(_key(name))
    if hit is not None:
        return GpuMatch(model=hit[0], name=hit[1])
    wanted = _words(name)
    if not wanted:
        return None
    index = _word_index(matrix.gpus.models)
    for fits in (
        index.joined.get("".join(wanted), frozenset()),
        frozenset(model for words, model in index.words if set(wanted) <= words),
    ):
        if len(fits) == 1:
            model = index.by_name[next(iter(fits))]
            return GpuMatch(model=model, name=model.name)
        if fits:
            names = sorted(fits)
            if len({index.by_name[n].cc for n in names}) > 1:
                raise _ambiguous(matrix, name, names)
            return GpuMatch(model=index.by_name[names[0]], name=name, candidates=tuple(names))
    return None


def suggest_gpus(matrix: Matrix, name: str) -> list[str]:
    """Up to three model names nearest to `name` (difflib on the words without NVIDIA / GeForce /
    Tesla, so "RTX 4909" is near "GeForce RTX 4090"): offered, never picked."""
    wanted = " ".join(_words(name))
    if not wanted:
        return []
    by_words: dict[str, str] = {}
    for m in matrix.gpus.models:
        for n in (m.name, *m.nvml_names, *m.aliases):
            by_words.setdefault(" ".join(_words(n)), m.name)
    near = difflib.get_close_matches(wanted, list(by_words), n=3 * _SUGGESTED, cutoff=0.75)
    return list(dict.fromkeys(by_words[w] for w in near))[:_SUGGESTED]


def _ambiguous(matrix: Matrix, name: str, candidates: list[str]) -> UsageError:
    shown = ", ".join(repr(c) for c in candidates[:_LISTED])
    more = f" and {len(candidates) - _LISTED} more" if len(candidates) > _LISTED else ""
    by_name = _word_index(matrix.gpus.models).by_name
    ccs = sorted({by_name[c].cc for c in candidates}, key=parse_cc)
    return UsageError(
        f"GPU {quote_input(name)} fits {len(candidates)} models: {shown}{more}",
        hint=f"their compute capabilities differ ({', '.join(ccs)}): give the full name, e.g. --gpu "
        f"{candidates[0]!r} (`envbuilder matrix list gpus` lists every name), or the compute "
        "capability with --cc X.Y",
    )


def gpu_from_match(matrix: Matrix, match: GpuMatch) -> HostGpu:
    """A host GPU given by name: what the matrix knows of its model. A name several models of one
    compute capability fit keeps the facts they share (brand, segment; the model, for the driver
    branch checks, when their branches agree) and says so in its name."""
    m = match.model
    name = match.name if not match.setting else f"{match.name} ({match.setting})"
    if not match.candidates:
        return HostGpu(name=name, cc=m.cc, brand=m.brand, segment=m.segment, model=m.name)
    models = [x for x in matrix.gpus.models if x.name in match.candidates]
    listed = ", ".join(match.candidates[:_LISTED])
    more = f" and {len(match.candidates) - _LISTED} more" if len(match.candidates) > _LISTED else ""
    brands, segments = {x.brand for x in models}, {x.segment for x in models}
    branches = {(x.first_branch, x.last_branch) for x in models}
    return HostGpu(
        name=f"{name} (any of {len(match.candidates)} models of compute capability {m.cc}: {listed}{more})",
        cc=m.cc,
        brand=brands.pop() if len(brands) == 1 else None,
        segment=segments.pop() if len(segments) == 1 else None,
        model=m.name if len(branches) == 1 and len(models) == len(match.candidates) else None,
    )


def gpu_from_cc(matrix: Matrix, cc: str) -> HostGpu:
    """A GPU known only by its compute capability. Raises UsageError for an unknown one."""
    parse_cc(cc)
    known = {a.cc for a in matrix.gpus.archs}
    if cc not in known:
        raise UsageError(
            f"unknown compute capability {cc!r}",
            hint=f"known compute capabilities: {', '.join(sorted(known, key=parse_cc))}",
        )
    return HostGpu(name=f"GPU with compute capability {cc}", cc=cc)


def enrich_host(matrix: Matrix, host: Host) -> Host:
    """Fill brand/segment/model of probed GPUs from the matrix when NVML's name fits a model (or
    several of one compute capability: the facts they share). The probed name and compute
    capability stay as probed; a compute capability the probe could not read ('', from
    nvidia-smi's [N/A]) is the model's. Raises UsageError for a GPU of neither: no rule of the
    resolver can be checked without its compute capability."""
    gpus = []
    for g in host.gpus:
        try:
            known = gpu_from_match(matrix, lookup_gpu(matrix, g.name))
        except UsageError:
            if not g.cc:
                raise UsageError(
                    f"the compute capability of GPU {quote_input(g.name)} was not read by the probe, "
                    "and no known model has that name",
                    hint="describe the host instead: --gpu NAME (the model) or --cc X.Y, with --driver "
                    "VERSION; `envbuilder matrix list gpus` lists the known models",
                ) from None
            gpus.append(g)
            continue
        cc = g.cc or known.cc
        gpus.append(replace(g, cc=cc, brand=g.brand or known.brand, segment=known.segment, model=known.model))
    return replace(host, gpus=tuple(gpus))
