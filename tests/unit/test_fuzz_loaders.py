"""Property-based fuzzing of the loaders and what reads their output (issue 18): the spec loader,
the lock loader, the certificate loader, and the report and certs code over what it accepts.
Whatever the input, nothing raises but an EnvbuilderError.

Two kinds of input per loader: random JSON/YAML structures (with the loaders' own field names as
keys, so they reach past the first check), and mutations of a valid document: one field, anywhere
in it, replaced by a random value (or removed); a mutated certificate is sealed again, so its hashes
verify and only the types are wrong. That second kind is what found the issue's 255 crashing
certificates. The budget is a hypothesis profile (tests/conftest.py): `ci` in the unit suite
(seconds, seeded), `fuzz` under `make fuzz`: 10,000 inputs per loader, shared among its tests
(`share`), and 3,000 more through the report's HTML and the store. Inputs that crashed a loader
once stay as explicit @example cases.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import io
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from cert_factory import cert_doc
from hypothesis import event, example, given, settings
from hypothesis import strategies as st
from render_cases import TORCH_BUNDLED_CU130
from test_lock import built_lock

from envbuilder.certify.certificate import Certificate, seal, verify_certificate
from envbuilder.certify.record import CERTIFICATE_SHAPE
from envbuilder.certify.store import CertStore, certificate_summary
from envbuilder.cli.certify_cmd import print_summary
from envbuilder.errors import EnvbuilderError
from envbuilder.image.lock import lock_json, read_lock
from envbuilder.image.render import render_dockerfile
from envbuilder.image.spec import load_spec, parse_spec
from envbuilder.report.compare import compare_reports, format_compare, render_compare_html
from envbuilder.report.html import render_html
from envbuilder.report.model import build_report
from envbuilder.report.terminal import format_terminal
from envbuilder.resolve.model import STACK_SHAPE

REPO = Path(__file__).parent.parent.parent
DATA = Path(__file__).parent.parent / "data"
Path_ = tuple[str | int, ...]


# --------------------------------------------------------------------------- values


def _keys(shape: Any, out: set[str]) -> set[str]:
    """Every field name a schema knows (random structures use them as keys)."""
    for name in ("fields",):
        for key, sub in (getattr(shape, name, None) or {}).items():
            out.add(key)
            _keys(sub, out)
    for name in ("inner", "item", "others"):
        sub = getattr(shape, name, None)
        if sub is not None:
            _keys(sub, out)
    return out


KEYS = sorted(_keys(CERTIFICATE_SHAPE, set()) | _keys(STACK_SHAPE, set()))
SPEC_KEYS = ["schema_version", "name", "framework", "python", "strategy", "requirements", "apt", "env"]
SPEC_KEYS += ["certify", "companions", "user", "flavor", "description", "indexes", "project", "entrypoint"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "3.12",
            "12.0",
            "sm_90",
            "pass",
            "fail",
            "skip",
            "train_gpu_fp32",
            "x" * 300,
            "\ud800",
            "\x1b[2J",
        ]
    ),
)
json_values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS + SPEC_KEYS) | st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=10,
)
documents = st.dictionaries(st.sampled_from(KEYS + SPEC_KEYS), json_values, max_size=8)


def _paths(doc: Any, here: Path_ = ()) -> Iterator[Path_]:
    """Every field's path; of a list only the first two items (telemetry series are long)."""
    if here:
        yield here
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*here, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:2]):
            yield from _paths(value, (*here, i))


@st.composite
def mutations(draw: st.DrawFn, base: dict[str, Any], paths: tuple[Path_, ...]) -> dict[str, Any]:
    """`base` with one field replaced by a random value, or removed."""
    doc = copy.deepcopy(base)
    path = draw(st.sampled_from(paths))
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    if draw(st.integers(0, 7)) == 0:
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return doc


def share(fraction: float) -> settings:
    """A test's part of its loader's budget: a loader's tests together run the profile's
    max_examples (10,000 under `fuzz`), at least 10 each."""
    return settings(max_examples=max(int(settings().max_examples * fraction), 10))


def _no_crash(run: Callable[[], object]) -> None:
    """The property: an envbuilder error (with a message) or nothing."""
    try:
        run()
    except EnvbuilderError as exc:
        assert exc.message and "\n" not in exc.message.strip()
        event(f"refused: {type(exc).__name__}")
    else:
        event("accepted")


@cache
def _scratch() -> Path:
    """One folder for the session's inputs and store, removed when the tests end."""
    path = Path(tempfile.mkdtemp(prefix="envbuilder-fuzz-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@cache
def _store() -> CertStore:
    return CertStore(_scratch() / "certs.sqlite")


def _write(name: str, text: str | bytes) -> Path:
    path = _scratch() / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def _dumps(doc: object) -> str:
    return json.dumps(doc)  # NaN and Infinity stay (json.loads reads them back)


# --------------------------------------------------------------------------- spec loader

SPEC_BASE: dict[str, Any] = yaml.safe_load((REPO / "images" / "pytorch-train.yaml").read_text())
SPEC_BASE.update(requirements=["pillow>=10"], apt=["git"], env={"OMP_NUM_THREADS": "8"})
SPEC_PATHS = tuple(_paths(SPEC_BASE))


def _spec_then_render(raw: object) -> None:
    spec = parse_spec(raw, "images/fuzz.yaml", base_dir=_scratch())
    spec.to_dict()
    spec.to_request()
    render_dockerfile(spec, TORCH_BUNDLED_CU130)


def _spec_file(raw: object) -> None:
    try:
        text = yaml.safe_dump(raw)
    except (yaml.YAMLError, ValueError):
        return
    path = _write("fuzz.yaml", text)
    _no_crash(lambda: load_spec(path))


@share(0.4)
@given(documents)
@example({"python": "3." + "1" * 5000})
@example({"framework": "torch==2.\uff11"})
def test_spec_loader_random_structures(raw: dict[str, Any]) -> None:
    _no_crash(lambda: _spec_then_render(raw))
    _spec_file(raw)


@share(0.4)
@given(mutations(SPEC_BASE, SPEC_PATHS))
@example({**SPEC_BASE, "requirements": "x" * 300})  # was an OSError (file name too long) in load_spec
def test_spec_loader_mutations(raw: dict[str, Any]) -> None:
    _no_crash(lambda: _spec_then_render(raw))
    _spec_file(raw)


@share(0.2)
@given(st.binary(max_size=200) | st.text(max_size=200))
@example(b"a: &a [1]\nb: *a\n" * 3)
@example("[" * 1000)
def test_spec_loader_raw_text(text: str | bytes) -> None:
    path = _write("raw.yaml", text)
    _no_crash(lambda: load_spec(path))


# --------------------------------------------------------------------------- lock loader

LOCK_BASE = built_lock().to_dict()
LOCK_PATHS = tuple(_paths(LOCK_BASE))


def _lock_and_consumers(text: str | bytes) -> None:
    """read_lock, then what build and `lock` do with its result."""
    path = _write("fuzz.lock.json", text)

    def run() -> None:
        lock = read_lock(path)
        _ = lock.host, lock.hash, lock.package_lock("x86_64")
        lock_json(lock)
        if lock.spec is not None:
            spec = parse_spec(lock.spec, str(path), base_dir=_scratch())
            render_dockerfile(spec, lock.stack)

    _no_crash(run)


@share(0.3)
@given(documents)
@example({"schema_version": 2, "resolution": {"host": {}}, "stack": {"companions": []}})
def test_lock_loader_random_structures(doc: dict[str, Any]) -> None:
    _lock_and_consumers(_dumps(doc))


@share(0.5)
@given(mutations(LOCK_BASE, LOCK_PATHS), st.booleans())
@example(
    {**LOCK_BASE, "stack": {**LOCK_BASE["stack"], "archs": {"sass": [None], "ptx": []}}, "lock_hash": None},
    True,
)
def test_lock_loader_mutations(doc: dict[str, Any], keep_hash: bool) -> None:
    if not keep_hash:  # without a recorded hash the whole lock reaches its consumers
        doc.pop("lock_hash", None)
    _lock_and_consumers(_dumps(doc))


@share(0.2)
@given(st.binary(max_size=200) | st.text(max_size=200))
@example('{"schema_version": ' + "9" * 5000 + "}")
@example("[" * 100_000)
@example('{"spec_path": "\\ud800"}')
def test_lock_loader_raw_text(text: str | bytes) -> None:
    _lock_and_consumers(text)


# --------------------------------------------------------------------------- certificates


def _sealed(doc: dict[str, Any]) -> str:
    """The document sealed again (hashes that verify), as JSON text; unsealable (NaN in a
    section the hash covers) as it is."""
    body = {k: v for k, v in doc.items() if k not in ("content_hash", "section_hashes")}
    try:
        return json.dumps(seal(body))
    except (TypeError, ValueError):
        return _dumps(doc)


CERT_BASES = [json.loads((DATA / "certs" / f"{n}.json").read_text()) for n in ("sample-gpu", "sample-cpu")]
MULTI_GPU = json.loads(
    (REPO / "benchmarks/results/multigpu-h200x2-2026-11-30/cert-container.json").read_text()
)
CERT_BASES += [MULTI_GPU, cert_doc()]
CERT_PATHS = [
    tuple(p for p in _paths(b) if p[0] not in ("content_hash", "section_hashes")) for b in CERT_BASES
]
OTHER = build_report(Certificate(CERT_BASES[0]))


def _certificate_and_consumers(text: str, *, html: bool = False) -> None:
    """What `report` (text, JSON, --compare), `certs show|import` and certify's summary do with
    a certificate file."""

    def run() -> None:
        cert = Certificate.from_json(text, "fuzz.json")
        verify_certificate(cert)
        json.dumps(certificate_summary(cert))
        with contextlib.redirect_stdout(io.StringIO()):
            print_summary(cert, cert.id)
        report = build_report(cert)
        format_terminal(report)
        json.dumps(report.to_dict())
        rows = compare_reports(OTHER, report)
        format_compare(OTHER, report, rows)
        if html:
            render_html(report)
            render_compare_html(OTHER, report, rows)

    _no_crash(run)


@share(0.3)
@given(documents)
def test_certificate_loader_random_structures(doc: dict[str, Any]) -> None:
    _certificate_and_consumers(_sealed(doc))


@st.composite
def cert_mutations(draw: st.DrawFn) -> dict[str, Any]:
    i = draw(st.integers(0, len(CERT_BASES) - 1))
    return draw(mutations(CERT_BASES[i], CERT_PATHS[i]))


@share(0.5)
@given(cert_mutations())
def test_certificate_loader_mutations(doc: dict[str, Any]) -> None:
    _certificate_and_consumers(_sealed(doc))


@given(cert_mutations())
@share(0.1)  # an HTML page takes ~100 ms
def test_report_html_of_mutated_certificates(doc: dict[str, Any]) -> None:
    _certificate_and_consumers(_sealed(doc), html=True)


@share(0.2)
@given(st.binary(max_size=200) | st.text(max_size=200))
@example('{"kind": "envbuilder-certificate", "image": ' + "[" * 100 + "]" * 100 + "}")
@example('{"image": {"id": "\\ud800"}}')
@example('{"schema_version": ' + "1" * 5000 + "}")
def test_certs_import_raw_text(text: str | bytes) -> None:
    path = _write("import.json", text)
    _no_crash(lambda: _store().import_(path))


@share(0.2)
@given(cert_mutations())
def test_certs_import_of_mutated_certificates(doc: dict[str, Any]) -> None:
    path = _write("import.json", _sealed(doc))
    store = _store()

    def run() -> None:
        cid = store.import_(path)
        store.get(cid)
        store.list()
        store.remove(cid)

    _no_crash(run)
