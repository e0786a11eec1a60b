"""The image metadata reader: what render writes as labels, read_metadata reads back (one set of
keys for both), and a malformed label is a problem, never a traceback."""

from __future__ import annotations

from dataclasses import replace

from render_cases import TORCH_BUNDLED_CU130, TORCH_CPU, spec
from test_render import labels

from envbuilder.engine import ImageInfo
from envbuilder.image.lock import lock_hash
from envbuilder.image.metadata import LABEL_CERTIFY, LABEL_STACK, read_metadata
from envbuilder.image.render import HARNESS_DEST, RenderOptions, render_dockerfile, rendered_stack


def image(**labels_: str) -> ImageInfo:
    return ImageInfo(id="sha256:" + "a" * 64, tags=(), repo_digests=(), labels=labels_)


def test_what_render_writes_reads_back() -> None:
    s = spec(certify={"level": "quick", "thresholds": {"min_scaling": 0.9}})
    stack = replace(TORCH_BUNDLED_CU130, notes=("the driver's branch is old",))  # an apostrophe
    info = ImageInfo(
        id="sha256:" + "a" * 64,
        tags=(),
        repo_digests=(),
        labels=labels(render_dockerfile(s, stack)),
        env=("PATH=/opt/venv/bin:/usr/bin", "NVIDIA_REQUIRE_CUDA=cuda>=13.0"),
    )
    meta = read_metadata(info)
    written = rendered_stack(s, stack, RenderOptions())
    assert meta.problems == () and meta.stack == written and meta.stack_record == written.to_dict()
    assert meta.framework == "torch" and meta.min_driver == "580.65.06"
    assert meta.archs[0] == "sm_75" and meta.archs[-1] == "compute_120"
    assert meta.lock_hash == lock_hash(written, s.to_dict())
    assert meta.certify is not None and meta.certify.level == "quick"
    assert dict(meta.certify.thresholds) == {"min_scaling": 0.9}
    assert meta.harness == HARNESS_DEST
    assert meta.env["NVIDIA_REQUIRE_CUDA"] == "cuda>=13.0"


def test_a_cpu_stack_has_no_min_driver_and_no_archs() -> None:
    meta = read_metadata(image(**labels(render_dockerfile(spec(), TORCH_CPU))))
    assert meta.min_driver is None and meta.archs == () and meta.stack is not None


def test_an_image_without_labels_reads_as_empty() -> None:
    meta = read_metadata(image())
    assert (meta.stack, meta.stack_record, meta.certify, meta.harness, meta.problems) == (None,) * 4 + ((),)


def test_malformed_labels_are_problems_kept_as_evidence() -> None:
    meta = read_metadata(image(**{LABEL_STACK: "{not json", LABEL_CERTIFY: '{"level": "slow"}'}))
    assert meta.stack is None and meta.stack_record == {"unparsed": "{not json"}
    assert meta.certify is None
    assert len(meta.problems) == 2 and "not JSON" in meta.problems[0] and "certify.level" in meta.problems[1]
    partial = read_metadata(image(**{LABEL_STACK: '{"id": "x"}'}))
    assert (
        partial.stack is None and partial.stack_record == {"id": "x"} and "not a stack" in partial.problems[0]
    )


def test_a_label_nested_past_the_json_limits_is_a_problem_not_a_traceback() -> None:
    # Before: json.loads recursed into the label and read_metadata (which "never raises") raised
    # RecursionError; a foreign image (certify/foreign.py) chooses its own labels.
    deep = "[" * 100_000 + "]" * 100_000
    meta = read_metadata(image(**{LABEL_STACK: deep, LABEL_CERTIFY: "[" * 100_000}))
    assert meta.stack is None and meta.stack_record == {"unparsed": deep} and meta.certify is None
    assert [p.split(" (")[0] for p in meta.problems] == [
        f"label {LABEL_STACK} is not JSON",
        f"label {LABEL_CERTIFY} is not JSON",
    ]
