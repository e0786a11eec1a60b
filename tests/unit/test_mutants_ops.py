"""benchmarks/mutants.py's second and third operator sets (`--auto AREA --ops new|third`, issue
23): the one-line bugs they plant in a small module of known code, and what they leave alone
(messages, annotations, tuples whose length their use fixes), and the earlier sets' IDs unchanged
by them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]

MODULE = '''\
from envbuilder.image import secrets

REQUIRED = ("name", "version", "sha256")
HINT = "see {ref}"


def check(doc, text, key, problems):
    """A docstring: call(x) here is no code."""
    shown: tuple[str, str] = ("a", "b")
    value = redact(text)
    clean = text.strip()
    safe = secrets.redact(text, key)
    need(doc, "harness_sha256", str, "result")
    for field in ("started", "finished"):
        need(doc, field, str, "result")
    order = compare(text, key)
    first, second = text, key
    problems.append(f"{redact(text)} missing")
    raise ValueError("no", hint=HINT.format(ref=describe(doc)))
    return value, str(clean), len(safe), order, first, second, shown
'''


@pytest.fixture(scope="module")
def mutants() -> ModuleType:
    path = REPO / "benchmarks" / "mutants.py"
    spec = importlib.util.spec_from_file_location("mutants_under_test", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def area(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "m.py").write_text(MODULE)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    target = mutants.Target("m.py", ("check",), ("test_x.py",), constants=("REQUIRED",))
    monkeypatch.setitem(mutants.AREAS, "t", ("T", (target,)))
    return "t"


def changes(mutants: ModuleType, area: str, ops: str) -> set[tuple[str, str]]:
    return {(mu.old.strip(), mu.new.strip()) for mu in mutants.auto_mutants(area, ops)}


def test_a_dropped_call_leaves_its_argument_or_its_value(mutants: ModuleType, area: str) -> None:
    got = changes(mutants, area, "new")
    assert ("value = redact(text)", "value = text") in got
    assert ("clean = text.strip()", "clean = text") in got
    assert ("safe = secrets.redact(text, key)", "safe = text") in got  # a module's function
    # Builtins that convert (str, len) are no transform a test must look for.
    assert not any("str(clean)" in old and "str(clean)" not in new for old, new in got)
    assert not any("len(safe)" in old and "len(safe)" not in new for old, new in got)


def test_a_dropped_call_statement_a_removed_item_and_a_swap(mutants: ModuleType, area: str) -> None:
    got = changes(mutants, area, "new")
    assert ('need(doc, "harness_sha256", str, "result")', "pass") in got
    assert ('for field in ("started", "finished"):', 'for field in ("finished",):') in got
    assert ('for field in ("started", "finished"):', 'for field in ("started",):') in got
    assert ("order = compare(text, key)", "order = compare(key, text)") in got
    assert ('REQUIRED = ("name", "version", "sha256")', 'REQUIRED = ("name", "sha256")') in got
    # Swaps only of two non-constants: need(doc, "harness_sha256", ...) swaps doc and str alone.
    swaps = {new for old, new in got if old == 'need(doc, "harness_sha256", str, "result")'}
    assert swaps == {"pass", 'need(str, "harness_sha256", doc, "result")'}


def test_messages_annotations_and_fixed_tuples_are_left_alone(mutants: ModuleType, area: str) -> None:
    got = changes(mutants, area, "new")
    olds = {old for old, _ in got}
    assert not any("describe" in old and "describe" not in new for old, new in got)  # a hint's text
    assert 'shown: tuple[str, str] = ("a", "b")' in olds  # its literal, not its annotation
    assert not any(new.startswith("shown: tuple[str]") for _, new in got)
    assert "first, second = text, key" not in olds  # an unpacked tuple: its length is fixed
    assert not any("return" in old and "value, " not in new for old, new in got)
    # The redaction inside an f-string is no mutant (nothing in an f-string is); the statement is.
    assert ('problems.append(f"{redact(text)} missing")', "pass") in got
    assert not any("call(x)" in old for old in olds)  # the docstring


def test_the_first_sets_ids_stay_and_the_second_is_numbered_apart(mutants: ModuleType, area: str) -> None:
    old = mutants.auto_mutants(area, "old")
    new = mutants.auto_mutants(area, "new")
    third = mutants.auto_mutants(area, "third")
    fourth = mutants.auto_mutants(area, "fourth")
    fifth = mutants.auto_mutants(area, "fifth")
    sixth = mutants.auto_mutants(area, "sixth")
    seventh = mutants.auto_mutants(area, "seventh")
    eighth = mutants.auto_mutants(area, "eighth")
    every = mutants.auto_mutants(area, "all")
    assert old and new
    assert (
        every == old + new + third + fourth + fifth + sixth + seventh + eighth
    )  # (this module has no third-set mutant: test_the_third_set...)
    assert [mu.id for mu in new] == [f"TN{i:03d}" for i in range(1, len(new) + 1)]
    assert all(not mu.id.startswith("TN") for mu in old)
    assert mutants.auto_mutants(area, "new") == new  # deterministic


THIRD = """\
def pick(certs, name, size, hint):
    if certs:
        first = certs[0]
    last = certs[-1]
    head = name[:12]
    ok = name.startswith("sha256:") and size > 64
    run(name, check=False, timeout=30)
    fail("refused", hint="see docs")
    return first, last, head, ok, min(size, 8) + 1, size * 2, "a" + name
"""


@pytest.fixture()
def area3(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "p.py").write_text(THIRD)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setitem(mutants.AREAS, "p", ("P", (mutants.Target("p.py", ("pick",), ("test_x.py",)),)))
    return "p"


def test_the_third_set_forces_tests_drops_keywords_and_takes_the_other_of_a_pair(
    mutants: ModuleType, area3: str
) -> None:
    third = mutants.auto_mutants(area3, "third")
    assert [mu.id for mu in third] == [f"PT{i:03d}" for i in range(1, len(third) + 1)]
    got = changes(mutants, area3, "third")
    assert ("if certs:", "if True:") in got and ("if certs:", "if False:") in got
    assert ("first = certs[0]", "first = certs[-1]") in got
    assert ("last = certs[-1]", "last = certs[0]") in got
    assert ("head = name[:12]", "head = name[:13]") in got and ("head = name[:12]", "head = name[:11]") in got
    ok = 'ok = name.startswith("sha256:") and size > 64'
    assert (ok, 'ok = name.endswith("sha256:") and size > 64') in got
    assert (ok, 'ok = name.startswith("sha256:") and size > 65') in got
    assert ("run(name, check=False, timeout=30)", "run(name, timeout=30)") in got
    assert ("run(name, check=False, timeout=30)", "run(name, check=False)") in got
    back = 'return first, last, head, ok, min(size, 8) + 1, size * 2, "a" + name'
    assert (back, back.replace("min(size", "max(size")) in got
    assert (back, back.replace("+ 1", "- 1")) in got and (back, back.replace("size * 2", "size / 2")) in got
    # A hint is a message; a string joined is no number; the small integers are the first set's.
    assert not any("hint=" in old and "hint=" not in new for old, new in got)
    assert (back, back.replace('"a" + name', '"a" - name')) not in got
    assert (back, back.replace("+ 1", "+ 2")) not in got


FOURTH = """\
import re

_ID = re.compile(r"[0-9a-f]{64}")
_START = re.compile(r"^sha256:")


def pick(certs, text, path, env, flags, quiet=False, retries=3, name="x"):
    names = [c.name for c in certs if c.ok]
    head = text.strip().split(" ")[0]
    tail = text.split("/", 1)[-1]
    marked = _START.match(text)
    first = text[2:8]
    shown = "on" if quiet else "off"
    if _ID.fullmatch(text):
        total = 0
    elif _ID.match(text):
        total = 1
    total += len(names)
    mode = flags | 4
    owner = env.get("OWNER", "root")
    ordered = sorted(names)
    return head, first, shown, total, mode, owner, ordered, path.parent, path.name, certs.name, tail, marked
"""


@pytest.fixture()
def area4(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "q.py").write_text(FOURTH)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setitem(mutants.AREAS, "q", ("Q", (mutants.Target("q.py", ("pick",), ("test_x.py",)),)))
    return "q"


def test_the_fourth_set_plants_the_kinds_no_earlier_set_makes(mutants: ModuleType, area4: str) -> None:
    fourth = mutants.auto_mutants(area4, "fourth")
    assert [mu.id for mu in fourth] == [f"QF{i:03d}" for i in range(1, len(fourth) + 1)]
    got = changes(mutants, area4, "fourth")
    head = 'head = text.strip().split(" ")[0]'
    assert (head, 'head = text.lstrip().split(" ")[0]') in got
    assert (head, 'head = text.rstrip().split(" ")[0]') in got
    # The other side where it can differ: rsplit with a maxsplit, search on an unanchored pattern.
    assert (head, 'head = text.strip().rsplit(" ")[0]') not in got
    assert ('tail = text.split("/", 1)[-1]', 'tail = text.rsplit("/", 1)[-1]') in got
    assert not any(old == "marked = _START.match(text)" for old, _ in got)
    assert ("names = [c.name for c in certs if c.ok]", "names = [c.name for c in certs ]") in got
    assert ("first = text[2:8]", "first = text[:8]") in got and (
        "first = text[2:8]",
        "first = text[2:]",
    ) in got
    assert ('shown = "on" if quiet else "off"', 'shown = "on"') in got
    assert ('shown = "on" if quiet else "off"', 'shown = "off"') in got
    assert ("if _ID.fullmatch(text):", "if _ID.match(text):") in got
    assert ("elif _ID.match(text):", "elif _ID.search(text):") in got
    assert ("elif _ID.match(text):", "if _ID.match(text):") in got
    assert ("total += len(names)", "total = len(names)") in got
    assert ("mode = flags | 4", "mode = flags") in got and ("mode = flags | 4", "mode = 4") in got
    assert ('owner = env.get("OWNER", "root")', "owner = env.get('OWNER_', \"root\")") in got
    assert ('owner = env.get("OWNER", "root")', 'owner = env.get("OWNER")') in got
    assert ("ordered = sorted(names)", "ordered = sorted(names, reverse=True)") in got
    back = (
        "return head, first, shown, total, mode, owner, ordered, path.parent, path.name, "
        + "certs.name, tail, marked"
    )
    assert (back, back.replace("path.parent", "path")) in got
    assert (back, back.replace("path.name", "path.stem")) in got
    assert (back, back.replace("certs.name", "certs.stem")) not in got  # no path: AttributeError only
    signature = 'def pick(certs, text, path, env, flags, quiet=False, retries=3, name="x"):'
    assert (signature, signature.replace("quiet=False", "quiet=True")) in got
    assert (signature, signature.replace("retries=3", "retries=4")) in got
    assert (signature, signature.replace('name="x"', 'name=""')) in got
    # The earlier sets' kinds are theirs: no `if` forced, no keyword dropped, no constant moved.
    assert not any(new.strip() in ("if True:", "if False:") for _, new in got)
    assert (head, 'head = text.strip().split(" ")[-1]') not in got
    every = mutants.auto_mutants(area4, "all")
    assert tuple(mu for mu in every if mu.id.startswith("QF")) == fourth  # numbered apart


FIFTH = """\
import contextlib
import os


def keep(path, pairs, n):
    try:
        fd = os.open(path, os.O_RDWR, 0o600)
    except OSError:
        return None
    finally:
        os.close(3)
        os.close(4)
    try:
        with open(path, "w") as f, contextlib.suppress(ValueError):
            f.write("x")
    except (OSError, ValueError):
        raise
    for k, v in pairs:
        first, second = k, v
    for i, item in enumerate(pairs):
        pass
    return [i for i in range(n)], fd, first, second
"""


@pytest.fixture()
def area5(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "r.py").write_text(FIFTH)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setitem(mutants.AREAS, "r", ("R", (mutants.Target("r.py", ("keep",), ("test_x.py",)),)))
    return "r"


def test_the_fifth_set_narrows_handlers_skips_cleanups_and_swaps_what_was_paired(
    mutants: ModuleType, area5: str
) -> None:
    fifth = mutants.auto_mutants(area5, "fifth")
    assert [mu.id for mu in fifth] == [f"RV{i:03d}" for i in range(1, len(fifth) + 1)]
    got = changes(mutants, area5, "fifth")
    assert ("except OSError:", "except FileNotFoundError:") in got
    assert ("return None", "raise") in got  # the handler's body re-raises
    assert (
        "os.close(3)\n        os.close(4)",
        "pass",
    ) in got  # the finally body (one call: the second set's)
    assert ("fd = os.open(path, os.O_RDWR, 0o600)", "fd = os.open(path, os.O_RDWR, 0o644)") in got
    opened = 'with open(path, "w") as f, contextlib.suppress(ValueError):'
    assert (opened, opened.replace('"w"', "'a'")) in got
    assert (
        opened,
        opened.replace("contextlib.suppress(ValueError)", '__import__("contextlib").nullcontext()'),
    ) in got
    assert ("for k, v in pairs:", "for v, k in pairs:") in got
    assert ("first, second = k, v", "second, first = k, v") in got
    back = "return [i for i in range(n)], fd, first, second"
    assert (back, back.replace("range(n)", "range(n + 1)")) in got
    assert (back, back.replace("range(n)", "range(n - 1)")) in got
    # Not made: os.open's flags are no mode, an enumerate's index and item, a bare re-raise, a tuple
    assert not any(old.startswith("for i, item") for old, _ in got)
    assert not any(old == "raise" for old, _ in got)
    assert not any("except (OSError, ValueError)" in old for old, _ in got)
    assert not any("O_RDWR" in new and "O_RDWR" not in old for old, new in got)


SIXTH = """\
import math
import os
import re


def keep(path, tmp, lock, extra, data, items, n):
    m = re.match("x", data)
    if m is None or lock is not None:
        return None
    with lock.held(path):
        ok = path.is_file() and os.path.realpath(path) and not path.is_symlink()
    os.replace(tmp, path)
    tmp.replace(path)
    merged = {**extra, **{"a": 1}}
    for item in items:
        pass
    else:
        n = 0
    text = data.decode() + path.read_text(encoding="utf-8")
    return ok, merged, items[:n], round(n), math.ceil(n), text, extra | {"b": 2}
"""


@pytest.fixture()
def area6(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "s.py").write_text(SIXTH)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setitem(mutants.AREAS, "s", ("S", (mutants.Target("s.py", ("keep",), ("test_x.py",)),)))
    return "s"


def test_the_sixth_set_loosens_checks_where_outside_input_and_the_file_system_come_in(
    mutants: ModuleType, area6: str
) -> None:
    sixth = mutants.auto_mutants(area6, "sixth")
    assert [mu.id for mu in sixth] == [f"SS{i:03d}" for i in range(1, len(sixth) + 1)]
    got = changes(mutants, area6, "sixth")
    guard = "if m is None or lock is not None:"
    assert (guard, guard.replace("lock is not None", "bool(lock)")) in got
    assert (guard, guard.replace("m is None", "(not m)")) not in got  # a match is never falsy
    held = "with lock.held(path):"
    assert (held, 'with __import__("contextlib").nullcontext(lock.held(path)):') in got
    ok = "ok = path.is_file() and os.path.realpath(path) and not path.is_symlink()"
    assert (ok, ok.replace("is_file", "exists")) in got
    assert (ok, ok.replace("realpath", "abspath")) in got
    assert (ok, ok.replace("path.is_symlink()", "False")) in got
    assert ("os.replace(tmp, path)", '__import__("shutil").copyfile(tmp, path)') in got
    assert ("tmp.replace(path)", '__import__("shutil").copyfile(tmp, path)') in got
    assert ('merged = {**extra, **{"a": 1}}', 'merged = {**{"a": 1}, **extra}') in got
    assert ("n = 0", "pass") in got  # the for's else body
    text = 'text = data.decode() + path.read_text(encoding="utf-8")'
    assert (text, text.replace("data.decode()", 'data.decode(errors="replace")')) in got
    assert (text, text.replace('encoding="utf-8")', 'encoding="utf-8", errors="replace")')) in got
    back = 'return ok, merged, items[:n], round(n), math.ceil(n), text, extra | {"b": 2}'
    assert (back, back.replace("items[:n]", "items[:n + 1]")) in got
    assert (back, back.replace("items[:n]", "items[:n - 1]")) in got
    assert (back, back.replace("round(n)", "int(n)")) in got
    assert (back, back.replace("math.ceil", "math.floor")) in got
    assert (back, back.replace('extra | {"b": 2}', '{"b": 2} | extra')) in got
    every = mutants.auto_mutants(area6, "all")
    assert every[-len(sixth) :] == sixth  # numbered apart, after the earlier sets


SEVENTH = """\
import re

_ID = re.compile(r"^[0-9a-f]{64}$")
_PART = re.compile(r"^[a-z]+-[0-9]{1,3}$")


def read(doc, text, env, items):
    try:
        first = next((i for i in items if i), None)
    except FileNotFoundError:
        return None
    name, rest = text.split("=", 1)
    cells = text.strip().split()
    lines = text.splitlines()
    tail = text.rstrip("/")
    ok = isinstance(doc, dict) and isinstance(doc.get("name"), str) and text.isdigit()
    bare = text.removeprefix("sha256:")
    seconds = float(doc["seconds"])
    wheels = doc.get("wheels") or []
    size = doc.get("size", 0)
    user = env.get("USER", "")
    shown = str(doc.get("name", ""))
    newer = Version(text) < Version(name)
    valid = _ID.fullmatch(bare) and _PART.match(tail) and text.startswith("nvidia")
    raise ValueError("no", hint=f"{str(doc['x'])}")
"""


@pytest.fixture()
def area7(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "e.py").write_text(SEVENTH)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setitem(mutants.AREAS, "e", ("E", (mutants.Target("e.py", ("read",), ("test_x.py",)),)))
    return "e"


def test_the_seventh_set_widens_types_and_handlers_and_loosens_what_reads_outside_input(
    mutants: ModuleType, area7: str
) -> None:
    seventh = mutants.auto_mutants(area7, "seventh")
    assert [mu.id for mu in seventh] == [f"EE{i:03d}" for i in range(1, len(seventh) + 1)]
    got = changes(mutants, area7, "seventh")
    assert ("except FileNotFoundError:", "except OSError:") in got
    assert (
        "first = next((i for i in items if i), None)",
        "first = next((i for i in items if i))",
    ) in got
    assert ('name, rest = text.split("=", 1)', 'name, rest = text.split("=")') in got
    assert ("cells = text.strip().split()", 'cells = text.strip(" ").split()') in got
    assert ("cells = text.strip().split()", 'cells = text.strip().split(" ")') in got
    assert ("lines = text.splitlines()", 'lines = text.split("\\n")') in got
    assert ('tail = text.rstrip("/")', "tail = text.rstrip()") in got
    ok = 'ok = isinstance(doc, dict) and isinstance(doc.get("name"), str) and text.isdigit()'
    assert (ok, ok.replace("(doc, dict)", "(doc, (dict, list))")) in got
    assert (ok, ok.replace('"name"), str)', '"name"), (str, int, float))')) in got
    assert (ok, ok.replace("isdigit", "isnumeric")) in got
    assert ('bare = text.removeprefix("sha256:")', 'bare = text.lstrip("sha256:")') in got
    assert ('seconds = float(doc["seconds"])', 'seconds = int(doc["seconds"])') in got
    assert ('wheels = doc.get("wheels") or []', 'wheels = doc.get("wheels", [])') in got
    assert ('size = doc.get("size", 0)', 'size = (doc.get("size") or 0)') in got
    assert not any(old.startswith("user = env.get") for old, _ in got)  # a str -> str map
    assert ('shown = str(doc.get("name", ""))', 'shown = doc.get("name", "")') in got
    assert ("newer = Version(text) < Version(name)", "newer = str(text) < str(name)") in got
    valid = 'valid = _ID.fullmatch(bare) and _PART.match(tail) and text.startswith("nvidia")'
    assert (valid, valid.replace('text.startswith("nvidia")', '("nvidia" in text)')) in got
    pattern = '_ID = re.compile(r"^[0-9a-f]{64}$")'
    assert (pattern, pattern.replace("{64}", "{63,64}")) in got
    assert (pattern, pattern.replace("{64}", "{64,65}")) in got
    part = '_PART = re.compile(r"^[a-z]+-[0-9]{1,3}$")'
    assert (part, part.replace("[a-z]+", "[a-z]*")) in got
    assert (part, part.replace("{1,3}", "{0,3}")) in got
    assert (part, part.replace("{1,3}", "{1,4}")) in got
    assert not any("hint" in old for old, _ in got)  # a message is left alone
    every = mutants.auto_mutants(area7, "all")
    later = len(mutants.auto_mutants(area7, "eighth"))
    assert every[len(every) - later - len(seventh) : len(every) - later] == seventh  # numbered apart


def test_every_hand_written_mutant_still_plants_on_todays_code(mutants: ModuleType) -> None:
    # A mutant whose snippet the code has moved away from measures nothing (`stale`): nine of
    # them went unnoticed until a mutation run (2026-12-06). Each snippet is found exactly once,
    # the planted module still parses, and every guard test file exists.
    import ast

    problems = []
    for name, mutants_of_set in mutants.SETS.items():
        for mu in mutants_of_set:
            text = (REPO / "envbuilder" / mu.file).read_text()
            if text.count(mu.old) != 1:
                problems.append(f"{name}/{mu.id}: snippet found {text.count(mu.old)} times in {mu.file}")
                continue
            try:
                ast.parse(text.replace(mu.old, mu.new))
            except SyntaxError as e:
                problems.append(f"{name}/{mu.id}: the planted {mu.file} does not parse ({e.msg})")
            missing = [t for t in mu.tests if not (REPO / "tests" / "unit" / t).is_file()]
            if missing:
                problems.append(f"{name}/{mu.id}: no guard test file {', '.join(missing)}")
    assert problems == []


EIGHTH = """\
import os
import time
from datetime import datetime, timezone


def pick(gpus: list, wanted: str, found: str, cert, doc, uuids, indexes, now=None):
    for gpu in gpus:
        judge(gpu, wanted)
    names = [g.name for g in cert.gpus if g.ok]
    shown = verify(cert, repository=cert.repo, hint=describe(gpus), quiet=False, encoding="utf-8")
    when = cert.issued_at if cert.stored_at else cert.image
    kind = doc["platform"] or doc.get("python_platform", "")
    chosen = uuids or indexes or []
    either = wanted == found or not gpus
    kept = [g for g in gpus if uuids or indexes]
    plain = not (P.fullmatch(wanted) or Q.fullmatch(wanted))
    os.kill(cert.pid, 9)
    started = time.time()
    stamp = datetime.now(timezone.utc)
    return names, shown, when, kind, chosen, either, kept, plain, started, stamp, f"{gpu}"
"""


@pytest.fixture()
def area8(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "h.py").write_text(EIGHTH)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    monkeypatch.setitem(mutants.AREAS, "h", ("H", (mutants.Target("h.py", ("pick",), ("test_x.py",)),)))
    return "h"


def test_the_eighth_set_takes_a_wrong_value_of_the_right_type_from_close_by(
    mutants: ModuleType, area8: str
) -> None:
    eighth = mutants.auto_mutants(area8, "eighth")
    assert [mu.id for mu in eighth] == [f"HH{i:03d}" for i in range(1, len(eighth) + 1)]
    got = changes(mutants, area8, "eighth")
    # The first item used inside the loop over the items (a for loop and a comprehension).
    assert ("judge(gpu, wanted)", "judge(next(iter(gpus)), wanted)") in got
    names = "names = [g.name for g in cert.gpus if g.ok]"
    assert (names, "names = [next(iter(cert.gpus)).name for g in cert.gpus if g.ok]") in got
    assert (names, "names = [g.name for g in cert.gpus if next(iter(cert.gpus)).ok]") in got
    # A keyword passed as None; not a hint, a False or an encoding.
    shown = 'shown = verify(cert, repository=cert.repo, hint=describe(gpus), quiet=False, encoding="utf-8")'
    assert (shown, shown.replace("repository=cert.repo", "repository=None")) in got
    assert not any(old == shown and "None" in new and "repository=None" not in new for old, new in got)
    # A sibling attribute (names that share a word) and a sibling key of the same base.
    when = "when = cert.issued_at if cert.stored_at else cert.image"
    assert (when, "when = cert.stored_at if cert.stored_at else cert.image") in got
    assert (when, "when = cert.issued_at if cert.issued_at else cert.image") in got
    assert not any(old == when and "cert.repo" in new for old, new in got)  # no word shared
    kind = 'kind = doc["platform"] or doc.get("python_platform", "")'
    assert (kind, 'kind = doc["python_platform"] or doc.get("python_platform", "")') in got
    assert (kind, 'kind = doc["platform"] or doc.get("platform", "")') in got
    # `a or b` swapped for two values, not for a constant or literal default, not for two tests.
    assert ("chosen = uuids or indexes or []", "chosen = indexes or uuids or []") in got
    assert not any(old.startswith("chosen =") and new.endswith("[] or indexes") for old, new in got)
    assert not any(old.startswith("either =") and "not gpus or" in new for old, new in got)
    assert not any(old.startswith("kept =") and "indexes or uuids" in new for old, new in got)  # a test
    assert not any(old.startswith("plain =") and "(Q.fullmatch" in new for old, new in got)
    # A parameter read as the other of its annotation; the OS's and the clock's siblings.
    assert ("judge(gpu, wanted)", "judge(gpu, found)") in got
    assert ("os.kill(cert.pid, 9)", "os.killpg(cert.pid, 9)") in got
    assert ("started = time.time()", "started = time.monotonic()") in got
    assert ("stamp = datetime.now(timezone.utc)", "stamp = datetime.now()") in got
    assert not any("describe" in old and "describe" not in new for old, new in got)  # a message
    assert not any('f"{' in old and 'f"{gpu}"' not in new for old, new in got)  # an f-string
    every = mutants.auto_mutants(area8, "all")
    assert every[-len(eighth) :] == eighth  # numbered apart, after the earlier sets
