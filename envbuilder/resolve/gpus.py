"""GPU models by the names people and NVML give them, and a host's GPUs filled in from the matrix.

One matching rule (`lookup_gpu`), tried in order, each step answering only when it is sure:
  1. a name of the matrix as given (name, NVML name or alias; case and spacing aside);
  2. the same name with punctuation, spacing and the words NVIDIA / GeForce / Tesla aside
     ("RTX 4090" is "NVIDIA GeForce RTX 4090", "A100" is "NVIDIA A100", "H100SXM" is "H100 SXM");
  3. every word given is a word of one model's name ("V100 SXM2", "RTX 4090 Laptop").
A step that fits several models lists them and stops (exit 2): a different model is never offered
as "closest", since a wrong GPU gives a confidently wrong stack.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, replace

from envbuilder.errors import UsageError
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix.model import GpuModel, Matrix
from envbuilder.versions import parse_cc

# Words that NVML adds or drops across drivers and SKUs, and that people leave out.
_FILLER = frozenset({"nvidia", "geforce", "tesla"})
_WORD = re.compile(r"[0-9a-z]+")
_LISTED = 8  # candidates named in an "ambiguous" error


@dataclass(frozen=True, slots=True)
class GpuMatch:
    model: GpuModel
    name: str  # the NVML name that matched, else the model's name


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

    Raises UsageError listing the candidates when several models fit, and UsageError without a
    suggestion when none does.
    """
    match = find_gpu(matrix, name)
    if match is None:
        raise UsageError(
            f"unknown GPU {name!r}: no known model has that name",
            hint="give the name nvidia-smi prints (nvidia-smi --query-gpu=name --format=csv,noheader); "
            f"`envbuilder matrix list gpus` lists the {len(matrix.gpus.models)} known models; "
            "or give the compute capability with --cc X.Y",
        )
    return match


def find_gpu(matrix: Matrix, name: str) -> GpuMatch | None:
    """`lookup_gpu` that answers None when no model fits. Raises UsageError listing the
    candidates when several do."""
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
            raise _ambiguous(name, sorted(fits))
    return None


def _ambiguous(name: str, candidates: list[str]) -> UsageError:
    shown = ", ".join(repr(c) for c in candidates[:_LISTED])
    more = f" and {len(candidates) - _LISTED} more" if len(candidates) > _LISTED else ""
    return UsageError(
        f"GPU {name!r} fits {len(candidates)} models: {shown}{more}",
        hint=f"give the full name, e.g. --gpu {candidates[0]!r} (`envbuilder matrix list gpus` "
        "lists every name), or the compute capability with --cc X.Y",
    )


def gpu_from_match(match: GpuMatch) -> HostGpu:
    """A host GPU given by name: what the matrix knows of its model."""
    m = match.model
    return HostGpu(name=match.name, cc=m.cc, brand=m.brand, segment=m.segment, model=m.name)


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
    """Fill brand/segment/model of probed GPUs from the matrix when NVML's name fits one model."""
    gpus = []
    for g in host.gpus:
        try:
            model = lookup_gpu(matrix, g.name).model
        except UsageError:
            gpus.append(g)
            continue
        gpus.append(replace(g, brand=g.brand or model.brand, segment=model.segment, model=model.name))
    return replace(host, gpus=tuple(gpus))
