"""os.open and os.close counted (still the real calls): for tests that check that what the code
opened it also closed, refused or not."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class Descriptors:
    """The file descriptors os.open handed out and os.close took back, in order."""

    opened: list[int] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)


def count_descriptors(monkeypatch: pytest.MonkeyPatch) -> Descriptors:
    """From now to the end of the test, every os.open and os.close is noted."""
    seen = Descriptors()
    real_open, real_close = os.open, os.close

    def opening(*args: Any, **kw: Any) -> int:
        seen.opened.append(real_open(*args, **kw))
        return seen.opened[-1]

    def closing(fd: int) -> None:
        seen.closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", opening)
    monkeypatch.setattr(os, "close", closing)
    return seen
