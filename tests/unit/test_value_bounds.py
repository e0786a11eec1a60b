"""Each value check at its door, at both bounds of every quantifier and with a value that is not
a string, and what its refusal says (issue 23: the survivors of `--auto values` after the hostile
corpus, benchmarks/results/values-survivors-2026-12-06.md).

The hostile corpus (test_hostile_corpus.py) asks whether a hostile string is refused with the
door's exit code on one line. Here: the value just inside each bound passes and the one just
outside is refused; an int, a list, None or a bool where a string goes is refused with the
door's own error (never a TypeError or AttributeError); and the message names the field and the
value it refuses, and the rule that refused it, so that a refusal a user reads is the right one.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_hostile_corpus import SPEC

from envbuilder.errors import SpecError
from envbuilder.image.spec import MAX_ITEMS, parse_spec


def _spec(**fields: Any) -> Any:
    return parse_spec({**copy.deepcopy(SPEC), **fields}, "images/smoke.yaml")


def _refused(error: type[Exception], call: Any, *args: Any, **kwargs: Any) -> Any:
    """The error `call` raises: `error` itself, its message one line."""
    with pytest.raises(error) as info:
        call(*args, **kwargs)
    text = str(info.value)
    assert text and "\n" not in text and "\r" not in text, repr(text)
    return info.value


# --------------------------------------------------------------------------- indexes


def _index(i: int) -> dict[str, str]:
    return {"name": f"i{i}", "url": f"https://p{i}.example/simple"}


def test_indexes_at_the_item_limit() -> None:
    """MAX_ITEMS indexes are all kept; one more is refused, as every other list of a spec (it was
    cut to the first MAX_ITEMS without a word: an index the spec names silently dropped)."""
    assert len(_spec(indexes=[_index(i) for i in range(MAX_ITEMS)]).indexes) == MAX_ITEMS
    exc = _refused(SpecError, _spec, indexes=[_index(i) for i in range(MAX_ITEMS + 1)])
    assert "field 'indexes'" in str(exc) and f"more than {MAX_ITEMS} items" in str(exc)
