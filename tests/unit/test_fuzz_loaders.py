"""Property-based fuzzing of the loaders and what reads their output (issues 18 and 23): the
spec, lock and certificate loaders and the report and certs code over what they accept (nothing
raises but an EnvbuilderError); and the loaders of what others hand in (issue 23): DSSE
envelopes, statement payloads, registry answers, harness output, trust policies (only each one's
documented outcome, within a time and memory bound; section "answers from outside").

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
import os
import shutil
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from cert_factory import cert_doc
from hypothesis import event, example, given, settings
from hypothesis import strategies as st
from render_cases import TORCH_BUNDLED_CU130
from securesystemslib.dsse import Envelope
from test_lock import built_lock

from envbuilder.attest.envelope import Refused, Verified, verify_envelope
from envbuilder.attest.imported import import_certificate
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.policy import TrustedKey, TrustPolicy, load_policy
from envbuilder.attest.statement import (
    PAYLOAD_TYPE,
    ImageSubject,
    certificate_statements,
    encode,
    parse_statement,
)
from envbuilder.certify.certificate import Certificate, seal, verify_certificate
from envbuilder.certify.harness_plan import parse_harness_output
from envbuilder.certify.record import CERTIFICATE_SHAPE
from envbuilder.certify.store import CertStore, certificate_summary
from envbuilder.cli.certify_cmd import print_summary
from envbuilder.errors import EnvbuilderError, RegistryError, SigningKeyError
from envbuilder.image.lock import lock_json, read_lock
from envbuilder.image.render import render_dockerfile
from envbuilder.image.spec import load_spec, parse_spec
from envbuilder.registry.auth import parse_token_answer
from envbuilder.registry.client import Manifest, _index_descriptors, _media_type_field
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


def _import(store: CertStore, path: Path) -> str:
    """`certs import` (attest.imported.import_certificate, what the CLI calls) with no trusted key."""
    return import_certificate(path, store=store, policy=lambda: TrustPolicy(keys=())).id


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
    _no_crash(lambda: _import(_store(), path))


@share(0.2)
@given(cert_mutations())
def test_certs_import_of_mutated_certificates(doc: dict[str, Any]) -> None:
    path = _write("import.json", _sealed(doc))
    store = _store()

    def run() -> None:
        cid = _import(store, path)
        store.get(cid)
        store.list()
        store.remove(cid)

    _no_crash(run)


# --------------------------------------------------------------------------- answers from outside
# Issue 23 item 8: the loaders of what others hand in (a DSSE envelope and its statement from a
# registry, a registry's manifests, indexes and token answers, a harness's output, a trust policy).
# Each input is also hostile on purpose: nested up to 200,000 deep, numbers up to 10,000 digits,
# YAML aliases that contain themselves. Property of every input: only the loader's documented
# outcome (a value, or its documented error: never a traceback), within BOUND_S seconds and
# BOUND_MIB of memory (tracemalloc's peak over the call).

BOUND_S = 10.0  # per input (issue 23: no hang over 10 s), under tracemalloc on a loaded 2-core machine
BOUND_MIB = 64

ENVELOPE_KEYS = ["payload", "payloadType", "signatures", "keyid", "sig"]
STATEMENT_KEYS = ["_type", "subject", "name", "digest", "sha256", "predicateType", "predicate", "certificate"]
REGISTRY_KEYS = ["schemaVersion", "mediaType", "manifests", "layers", "config", "digest", "size"]
REGISTRY_KEYS += ["artifactType", "annotations", "subject", "token", "access_token", "expires_in"]
RESULT_KEYS = ["kind", "verdict", "steps", "nonce", "harness_sha256", "gpu_path", "status", "name"]
POLICY_KEYS = ["schema_version", "max_age", "keys", "name", "public_key", "pem", "repositories"]


def _structures(keys: list[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda kids: (
            st.lists(kids, max_size=3)
            | st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), kids, max_size=4)
        ),
        max_leaves=12,
    )


@st.composite
def hostile_json(draw: st.DrawFn) -> bytes:
    """What D6/D7 used, and its kin: brackets nested up to 200,000 deep (closed or not, inside a
    field or bare), a number of thousands of digits, invalid UTF-8."""
    kind = draw(st.sampled_from(["deep", "deep-in-field", "digits", "float-digits", "utf8", "deep-strings"]))
    depth = draw(st.integers(1, 200_000))
    opener = draw(st.sampled_from(["[", '{"a":', '[{"a":']))
    closer = {"[": "]", '{"a":': "}", '[{"a":': "}]"}[opener]
    closed = draw(st.booleans())
    deep = opener * depth + ("1" + closer * depth if closed else "")
    digits = "9" * draw(st.integers(4000, 10_000))
    key = draw(st.sampled_from(ENVELOPE_KEYS + STATEMENT_KEYS + REGISTRY_KEYS + RESULT_KEYS))
    text = {
        "deep": deep,
        "deep-in-field": '{"' + key + '": ' + deep + "}",
        "digits": '{"' + key + '": ' + digits + "}",
        "float-digits": '{"' + key + '": ' + digits + ".5e" + digits[:3] + "}",
        "utf8": '{"' + key + '": "\xff\xfe"}',
        "deep-strings": '{"' + key + '": "' + "[" * depth + '"}',
    }[kind]
    event(f"hostile: {kind}")
    return text.encode("utf-8", errors="surrogateescape") if kind != "utf8" else b'{"a": "\xff\xfe"}'


def _bounded(run: Callable[[], object], allowed: tuple[type[BaseException], ...]) -> object:
    """Run one input: its outcome or one of `allowed` (a one-line message), within BOUND_S and
    BOUND_MIB. Anything else (a RecursionError, a KeyError, a MemoryError) fails the property."""
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]  # the peak is absolute: what this call added is the bound
    started = time.perf_counter()
    try:
        out = run()
    except allowed as exc:
        message = getattr(exc, "message", None) or str(exc)
        assert message and "\n" not in message.strip(), message
        event(f"refused: {type(exc).__name__}")
        out = exc
    else:
        event("accepted")
    elapsed = time.perf_counter() - started
    peak = (tracemalloc.get_traced_memory()[1] - baseline) / 2**20
    assert elapsed < BOUND_S, f"{elapsed:.1f} s"
    assert peak < BOUND_MIB, f"{peak:.0f} MiB"
    return out


@pytest.fixture(scope="module", autouse=False)
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


@cache
def _signer() -> Any:
    return load_signer(generate_key("fuzz", directory=_scratch() / "keys"))


@cache
def _policy() -> TrustPolicy:
    return TrustPolicy(keys=(TrustedKey(name="fuzz", key=_signer().public_key),), source="fuzz")


SUBJECT = ImageSubject(
    repository="reg.lan/team/train",
    manifest_digest="sha256:" + "ab" * 32,
    image_id=CERT_BASES[1]["image"]["id"],
)
STATEMENTS = certificate_statements(Certificate(CERT_BASES[1]), SUBJECT)
STATEMENT_PATHS = [tuple(_paths(s)) for s in STATEMENTS]


def _envelope(payload: bytes, *, sign: bool = True) -> bytes:
    env = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    if sign:
        env.sign(_signer())
    return json.dumps(env.to_dict()).encode()


def _verify(raw: bytes) -> object:
    out = verify_envelope(
        raw, repository=SUBJECT.repository, digest=SUBJECT.manifest_digest, policy=_policy()
    )
    assert isinstance(out, Verified | Refused)
    if isinstance(out, Refused):
        assert "\n" not in out.message and len(out.message) < 2000
        event(f"refused: {out.reason}")
    return out


# envelope loader: 10,000 inputs over these four tests


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
@example(b"[" * 200_000 + b"]" * 200_000)
def test_envelope_loader_raw_bytes(raw: bytes) -> None:
    _bounded(lambda: _verify(raw), ())


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(_structures(ENVELOPE_KEYS))
def test_envelope_loader_random_structures(doc: Any) -> None:
    _bounded(lambda: _verify(_dumps(doc).encode()), ())


@pytest.mark.usefixtures("traced")
@share(0.2)
@given(st.sampled_from(range(len(STATEMENTS))).flatmap(lambda i: st.tuples(st.just(i), st.data())))
def test_envelope_loader_mutated_envelopes(case: tuple[int, Any]) -> None:
    i, data = case
    base = json.loads(_envelope(encode(STATEMENTS[i])))
    doc = data.draw(mutations(base, tuple(_paths(base))))
    _bounded(lambda: _verify(_dumps(doc).encode()), ())


@pytest.mark.usefixtures("traced")
@share(0.2)
@given(hostile_json())
def test_envelope_loader_hostile(raw: bytes) -> None:
    _bounded(lambda: _verify(raw), ())


# statement payload loader (signed by the trusted key, so each reaches parse_statement and the
# certificate predicate's checks): 10,000 inputs over these three tests


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(_structures(STATEMENT_KEYS))
def test_statement_loader_random_structures(doc: Any) -> None:
    raw = _envelope(_dumps(doc).encode())
    _bounded(lambda: _verify(raw), ())
    _bounded(lambda: parse_statement(_dumps(doc).encode()), (ValueError,))


@pytest.mark.usefixtures("traced")
@share(0.5)
@given(st.sampled_from(range(len(STATEMENTS))).flatmap(lambda i: st.tuples(st.just(i), st.data())))
def test_statement_loader_mutations(case: tuple[int, Any]) -> None:
    i, data = case
    doc = data.draw(mutations(STATEMENTS[i], STATEMENT_PATHS[i]))
    raw = _envelope(_dumps(doc).encode())
    _bounded(lambda: _verify(raw), ())


@pytest.mark.usefixtures("traced")
@share(0.2)
@given(hostile_json() | st.binary(max_size=200))
@example(b"[" * 200_000 + b"]" * 200_000)  # D6's T7b: a payload like that, signed by the trusted key
@example(b'{"_type": ' + b"9" * 4000 + b"}")  # found by make fuzz: echoed whole in the refusal
def test_statement_loader_hostile(payload: bytes) -> None:
    raw = _envelope(payload)
    _bounded(lambda: _verify(raw), ())
    _bounded(lambda: parse_statement(payload), (ValueError,))


# registry answer loaders (a manifest, an index, a referrers answer, a token answer): 10,000
# inputs over these three tests


def _registry_answer(body: bytes) -> None:
    for run in (
        lambda: Manifest(body=body, media_type="x", digest="sha256:00").json(),
        lambda: _index_descriptors(body, "fuzz index"),
        lambda: _media_type_field(body, "fuzz manifest"),
        lambda: parse_token_answer(body, "the fuzz token server"),
    ):
        _bounded(run, (RegistryError,))


@pytest.mark.usefixtures("traced")
@share(0.4)
@given(_structures(REGISTRY_KEYS))
def test_registry_answer_loaders_random_structures(doc: Any) -> None:
    _registry_answer(_dumps(doc).encode())


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(st.binary(max_size=300))
def test_registry_answer_loaders_raw_bytes(body: bytes) -> None:
    _registry_answer(body)


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(hostile_json())
def test_registry_answer_loaders_hostile(body: bytes) -> None:
    _registry_answer(body)


# harness output loader (stdout's last JSON line and result.json, both from the image under
# test): 10,000 inputs over these three tests


def _harness_output(text: bytes) -> None:
    io_dir = _scratch() / "io"
    io_dir.mkdir(exist_ok=True)
    (io_dir / "result.json").write_bytes(text)
    decoded = text.decode("utf-8", errors="replace")
    for run in (
        lambda: parse_harness_output(None, "step\n" + decoded),
        lambda: parse_harness_output(io_dir, ""),
    ):
        out = _bounded(run, ())
        assert out is None or (isinstance(out, dict) and out.get("kind") == "result")


@pytest.mark.usefixtures("traced")
@share(0.4)
@given(_structures(RESULT_KEYS))
def test_harness_output_random_structures(doc: Any) -> None:
    _harness_output(_dumps(doc if not isinstance(doc, dict) else {"kind": "result", **doc}).encode())


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(st.binary(max_size=300))
def test_harness_output_raw_bytes(body: bytes) -> None:
    _harness_output(b"{" + body)


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(hostile_json())
@example(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}")  # D7
def test_harness_output_hostile(body: bytes) -> None:
    _harness_output(body)


# trust policy loader (a --trust file, and its key files): 10,000 inputs over these four tests

POLICY_BASE: dict[str, Any] = {
    "schema_version": 1,
    "max_age": "30d",
    "keys": [
        {"name": "ci", "public_key": "keys/fuzz.pub", "repositories": ["reg.lan/team/*"]},
        {"name": "inline", "pem": ""},
    ],
}


@cache
def _policy_base() -> dict[str, Any]:
    doc = copy.deepcopy(POLICY_BASE)
    doc["keys"][1]["pem"] = (_scratch() / "keys" / "fuzz.pub").read_text() if _signer() else ""
    return doc


def _policy_file(text: str | bytes) -> None:
    path = _write("trust.yaml", text)
    _bounded(lambda: load_policy(path), (SigningKeyError,))


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(_structures(POLICY_KEYS))
def test_trust_policy_loader_random_structures(doc: Any) -> None:
    _policy_file(_dumps(doc))  # JSON is YAML


@pytest.mark.usefixtures("traced")
@share(0.3)
@given(st.data())
def test_trust_policy_loader_mutations(data: Any) -> None:
    base = _policy_base()
    doc = data.draw(mutations(base, tuple(_paths(base))))
    try:
        text = yaml.safe_dump(doc)
    except (yaml.YAMLError, ValueError):
        return
    _policy_file(text)


@st.composite
def yaml_bombs(draw: st.DrawFn) -> str:
    """D12's 406-byte bomb and its kin: anchors each listing the one before N times, aliases
    inside the value they name, huge integers, deep flow nesting, a key file that is a FIFO."""
    kind = draw(st.sampled_from(["bomb", "cycle", "digits", "deep", "fifo-key"]))
    event(f"hostile: {kind}")
    if kind == "bomb":
        width, levels = draw(st.integers(2, 12)), draw(st.integers(2, 12))
        parts = ["&a0 [" + ", ".join(["xx"] * width) + "]"]
        parts += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
        return "schema_version: 1\nmax_age: [" + ", ".join(parts) + "]\nkeys: []\n"
    if kind == "cycle":
        return draw(
            st.sampled_from(
                ["keys: &a [*a]\n", "max_age: &a {x: *a}\n", "&a [*a]\n", "keys: [&k {name: *k}]\n"]
            )
        )
    if kind == "digits":
        field = draw(st.sampled_from(["max_age", "schema_version"]))
        return f"schema_version: 1\n{field}: {'9' * draw(st.integers(4000, 10_000))}\nkeys: []\n"
    if kind == "deep":
        depth = draw(st.integers(1, 100_000))
        return "schema_version: 1\nmax_age: " + "[" * depth + "]" * depth + "\nkeys: []\n"
    fifo = _scratch() / "fifo.pub"
    if not fifo.exists():
        os.mkfifo(fifo)
    return "schema_version: 1\nkeys: [{name: x, public_key: fifo.pub}]\n"


@pytest.mark.usefixtures("traced")
@share(0.2)
@given(yaml_bombs())
@example("schema_version: 1\nmax_age: " + "9" * 4000 + "\nkeys: []\n")  # found: OverflowError in float()
@example('schema_version: 1\nkeys: [{name: x, pem: y}, {? "\\n0" : 1}]\n')  # found: a 2-line message
@example('schema_version: 1\nkeys: [{name: x, public_key: "a\\0b"}]\n')  # NUL in a path: ValueError
@example("schema_version: 1\n1: x\ny: z\nkeys: []\n")  # unknown keys of two types: sorted()
def test_trust_policy_loader_hostile(text: str) -> None:
    _policy_file(text)


@pytest.mark.usefixtures("traced")
@share(0.2)
@given(st.binary(max_size=300) | st.text(max_size=300))
def test_trust_policy_loader_raw_text(text: str | bytes) -> None:
    _policy_file(text)
