"""A command runner answering Slurm's commands from output recorded on the real one-host cluster of
the integration tests (scripts/slurm.sh; tests/data/slurm), and recording every command it got."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from envbuilder.host import CommandResult

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"


def recorded(name: str) -> str:
    return (DATA / name).read_text()


Answer = CommandResult | Callable[[Sequence[str]], CommandResult]


@dataclass
class FakeSlurm:
    """argv prefix (as a tuple) -> answer; the longest matching prefix wins; unknown: exit 127."""

    answers: dict[tuple[str, ...], Answer] = field(default_factory=dict)
    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str], timeout: float) -> CommandResult:
        self.calls.append(list(argv))
        for n in range(len(argv), 0, -1):
            answer = self.answers.get(tuple(argv[:n]))
            if answer is not None:
                return answer(argv) if callable(answer) else answer
        return CommandResult(returncode=127, stdout="", stderr=f"{argv[0]}: not found")

    def on(self, *prefix: str, stdout: str = "", stderr: str = "", code: int = 0) -> FakeSlurm:
        self.answers[prefix] = CommandResult(returncode=code, stdout=stdout, stderr=stderr)
        return self


def cluster() -> FakeSlurm:
    """The two-class test cluster as scontrol described it."""
    return (
        FakeSlurm()
        .on("scontrol", "show", "node", stdout=recorded("scontrol-show-node.txt"))
        .on("scontrol", "show", "partition", stdout=recorded("scontrol-show-partition.txt"))
    )
