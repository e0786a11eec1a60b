"""Known answers to "does this install set resolve to wheels for this Python and platform?": the
committed ones (matrices/generated/installable.yaml, written by `envbuilder matrix installable`)
and the user's live ones (the cache folder's installable.json, written by the same step without
--write). The resolver looks answers up and never asks an index: no answer is "not checked".

A key is (the sorted requirements, the framework's extra index, Python X.Y, platform): the set is
the framework with its extras and companions exactly as a build installs them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from envbuilder import resources
from envbuilder.atomic import write_text_atomic
from envbuilder.matrix.model import InstallAnswer, Matrix
from envbuilder.matrix.reader import Ctx, get_field, rows, version_field
from envbuilder.platforms import PLATFORMS

USER_FILE = "installable.json"

Key = tuple[tuple[str, ...], str | None, str, str]


def answer_key(requirements: Iterable[str], index_url: str | None, python: str, platform: str) -> Key:
    return (tuple(sorted(requirements)), index_url, python, platform)


def key_of(answer: InstallAnswer) -> Key:
    return answer_key(answer.requirements, answer.index_url, answer.python, answer.platform)


def find_answer(matrix: Matrix, key: Key) -> InstallAnswer | None:
    """The answer for `key`: the last one listed wins (the user's live answers come after the
    committed ones). None: nobody checked this set."""
    return _index(matrix.installable).get(key)


# The answers by key, for the last few answer tuples seen (held, so an id is never reused): the
# resolver asks once per candidate, and a scan of every answer each time would cost milliseconds.
_INDEXES: list[tuple[tuple[InstallAnswer, ...], dict[Key, InstallAnswer]]] = []


def _index(answers: tuple[InstallAnswer, ...]) -> dict[Key, InstallAnswer]:
    for held, index in _INDEXES:
        if held is answers:
            return index
    index = {key_of(a): a for a in answers}  # a later answer replaces an earlier one
    _INDEXES[:] = [(answers, index), *_INDEXES[:3]]
    return index


def load_answers(doc: tuple[dict[str, Any], Ctx]) -> tuple[InstallAnswer, ...]:
    """The rows of generated/installable.yaml. Raises MatrixError naming the row and field."""
    data, ctx = doc
    out: list[InstallAnswer] = []
    seen: set[Key] = set()
    for i, row in enumerate(rows(data, "answers", ctx)):
        c = ctx.at(f"answers[{i}]", row)
        reqs = get_field(row, "requirements", c, list)
        if not reqs or not all(isinstance(r, str) and r.strip() for r in reqs):
            raise c.fail("requirements", "expected a non-empty list of pip requirements")
        platform = get_field(row, "platform", c, str)
        if platform not in PLATFORMS:
            raise c.fail("platform", f"expected one of {', '.join(PLATFORMS)}, got {platform!r}")
        ok = row.get("ok")
        if not isinstance(ok, bool):
            raise c.fail("ok", f"expected true or false, got {ok!r}")
        why = get_field(row, "why", c, str, optional=True) or ""
        if not ok and not why:
            raise c.fail("why", "a set that does not resolve says why")
        answer = InstallAnswer(
            requirements=tuple(sorted(str(r) for r in reqs)),
            index_url=get_field(row, "index_url", c, str, optional=True) or None,
            python=version_field(row, "python", c),
            platform=platform,
            ok=ok,
            why=why,
            source=get_field(row, "source", c, str),
        )
        if key_of(answer) in seen:
            raise c.fail(None, "a second answer for the same install set, Python and platform")
        seen.add(key_of(answer))
        out.append(answer)
    return tuple(out)


def answer_to_dict(answer: InstallAnswer) -> dict[str, Any]:
    return {
        "requirements": list(answer.requirements),
        "index_url": answer.index_url,
        "python": answer.python,
        "platform": answer.platform,
        "ok": answer.ok,
        "why": answer.why,
        "source": answer.source,
    }


def user_file() -> Path:
    return resources.cache_dir() / USER_FILE


def read_user_answers(path: Path | None = None) -> tuple[InstallAnswer, ...]:
    """The live answers in the user's cache; a missing or damaged file is no answers (it is a
    cache: `matrix installable` writes it again), never an error."""
    try:
        doc = json.loads((path or user_file()).read_text(encoding="utf-8"))
        return tuple(
            InstallAnswer(
                requirements=tuple(sorted(str(r) for r in a["requirements"])),
                index_url=str(a["index_url"]) if a.get("index_url") else None,
                python=str(a["python"]),
                platform=str(a["platform"]),
                ok=bool(a["ok"]),
                why=str(a.get("why") or ""),
                source=str(a["source"]),
            )
            for a in doc["answers"]
            if a.get("platform") in PLATFORMS
        )
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def write_user_answers(answers: Iterable[InstallAnswer], path: Path | None = None) -> Path:
    """Merge `answers` into the user's cache (a new answer replaces the old one for its key).
    Raises OSError when the cache folder cannot be written."""
    target = path or user_file()
    merged = {key_of(a): a for a in read_user_answers(target)}
    merged.update({key_of(a): a for a in answers})
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": 1, "answers": [answer_to_dict(a) for a in merged.values()]}
    write_text_atomic(target, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return target


def with_user_answers(matrix: Matrix, path: Path | None = None) -> Matrix:
    """`matrix` with the user's live answers after the committed ones (so they win)."""
    live: tuple[InstallAnswer, ...] = ()
    with contextlib.suppress(OSError):
        live = read_user_answers(path)
    return replace(matrix, installable=matrix.installable + live) if live else matrix


_HEADER = """\
# Generated by `envbuilder matrix installable --write` (do not edit by hand): whether each candidate
# stack's whole install set (the framework with its extras and companions, as a build installs
# them) resolves to wheels for one Python and platform, as uv answered from the index metadata
# (`uv pip compile --only-binary :all: --python-version X.Y --python-platform P`). The resolver
# rejects a set answered `ok: false` (component `installable`) and warns on a set with no answer.
# Sets from download.pytorch.org (torch's CUDA variants) are answered only where that index is
# reachable.
schema_version: 1
"""


def render_answers(answers: Iterable[InstallAnswer], *, source: str, reviewed: str) -> str:
    """generated/installable.yaml for `answers` (sorted, one flow mapping a row: small diffs)."""
    rows_out = sorted(answers, key=lambda a: (a.requirements, a.index_url or "", a.platform, _py(a.python)))
    lines = [_HEADER + f"source: {json.dumps(source)}", f'reviewed: "{reviewed}"', "answers:"]
    for a in rows_out:
        doc = answer_to_dict(a)
        if not doc["index_url"]:
            del doc["index_url"]
        if a.ok:
            del doc["why"]
        lines.append(f"  - {json.dumps(doc, separators=(', ', ': '))}")
    if not rows_out:
        lines[-1] = "answers: []"
    return "\n".join(lines) + "\n"


def _py(python: str) -> tuple[int, ...]:
    return tuple(int(p) for p in python.split(".") if p.isdigit())
