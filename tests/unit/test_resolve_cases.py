"""Resolver cases as data: one file per real-world situation in tests/data/cases/.

Each case gives a request and a host, and what must come out: the chosen stack's fields (glob
patterns on dotted paths of the stack JSON, or `stack: null`), rejections that must be present
(substrings of candidate and reason, exact component), and optional note/warning substrings
(`notes_contain`, `notes_absent`, `warnings_contain`; `report` names the real-world report), or
`error:` (substrings of the message and hint, and one that must be absent) for input that must be
refused before resolving.
`rejected_summary:` pins the one-line count ("4 candidates rejected; arch: 4", as the README shows).
`report:` names the public report the situation comes from, where one exists.
`host: {wsl: true}` is `resolve --wsl`: the driver is the Windows driver nvidia-smi prints in WSL2.
`request: {platform: ...}` is `resolve --platform` (any spelling); without it a given host resolves
for the platform its GPUs exist in, else linux/amd64.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml

from envbuilder.cli.options import request_from_options
from envbuilder.errors import UsageError
from envbuilder.matrix import load_matrix
from envbuilder.pipeline.resolution import target_host
from envbuilder.platforms import parse_platform
from envbuilder.resolve.model import Resolution, rejection_summary
from envbuilder.resolve.resolver import resolve

CASES = sorted((Path(__file__).parent.parent / "data" / "cases").glob("*.yaml"))


def _dig(d: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        d = d[part]
    return d


@pytest.mark.parametrize("case_file", CASES, ids=[c.stem for c in CASES])
def test_case(case_file: Path) -> None:
    case = yaml.safe_load(case_file.read_text())
    assert set(case) <= {"description", "report", "request", "host", "expect"}, set(case)
    assert str(case.get("report", "https://")).startswith("https://")
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(UsageError) as err:
            _resolve(case)
        assert expect["error"]["message"] in err.value.message
        assert expect["error"]["hint"] in (err.value.hint or "")
        if "absent" in expect["error"]:  # what the error must not offer (another model, a guess)
            assert expect["error"]["absent"] not in f"{err.value.message} {err.value.hint}"
        return
    res = _resolve(case)
    _check(res, expect)


def _resolve(case: dict[str, Any]) -> Resolution:
    matrix = load_matrix()
    req = case["request"]
    request = request_from_options(
        req["framework"],
        req.get("python"),
        req.get("strategy"),
        req.get("os"),
        req.get("flavor", "runtime"),
        bool(req.get("cpu", False)),
        bool(req.get("forward_compat", False)),
        parse_platform(req["platform"]) if "platform" in req else None,
    )
    h = case["host"]
    host = target_host(
        matrix, h.get("driver"), tuple(h.get("gpus", ())), tuple(h.get("ccs", ())), wsl=bool(h.get("wsl"))
    )
    if h.get("driver") is None and not h.get("gpus") and not h.get("ccs"):
        from envbuilder.host.model import Host

        host = Host(driver=None, gpus=(), source="given")
    return resolve(matrix, request, host)


def _check(res: Resolution, expect: dict[str, Any]) -> None:
    doc = res.to_dict()
    # Each reason is given once: a Python-independent rejection (arch, driver, strategy) is one
    # line per build, not one per Python candidate (the resolver's de-duplication).
    assert len(set(res.rejected)) == len(res.rejected), "a rejection is listed twice"
    if "rejected_summary" in expect:
        assert rejection_summary(res) == expect["rejected_summary"]
    if expect["stack"] is None:
        assert res.stack is None, f"expected no stack, got {res.stack and res.stack.id}"
        assert res.rejected, "an empty result must explain itself"
    else:
        assert res.stack is not None, "no stack; rejections:\n" + "\n".join(
            f"{r.candidate}: {r.component}: {r.reason}" for r in res.rejected
        )
        for path, pattern in expect["stack"].items():
            value = str(_dig(doc["stack"], path))
            assert fnmatch.fnmatch(value, pattern), f"stack.{path} = {value!r}, expected {pattern!r}"
    for want in expect.get("rejected", []):
        hits = [
            r
            for r in res.rejected
            if want["candidate"] in r.candidate
            and r.component == want["component"]
            and want.get("reason", "").casefold() in r.reason.casefold()
        ]
        assert hits, f"no rejection like {want}; got:\n" + "\n".join(
            f"{r.candidate}: {r.component}: {r.reason}" for r in res.rejected
        )
    if "only_components" in expect:
        assert {r.component for r in res.rejected} <= set(expect["only_components"])
    if "notes_contain" in expect:
        assert res.stack is not None
        assert any(expect["notes_contain"] in n for n in res.stack.notes), res.stack.notes
    if "notes_absent" in expect:
        assert res.stack is not None
        assert not any(expect["notes_absent"] in n for n in res.stack.notes), res.stack.notes
    if "warnings_contain" in expect:
        assert any(expect["warnings_contain"] in w for w in res.warnings), res.warnings


def test_cases_exist() -> None:
    assert len(CASES) >= 10
