"""Image specs: every field validated, hostile values refused with file, field and value named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from render_cases import spec

from envbuilder.errors import SpecError
from envbuilder.image.spec import load_spec, parse_spec
from envbuilder.resources import images_dir


def refused(**fields: Any) -> SpecError:
    with pytest.raises(SpecError) as info:
        spec(**fields)
    return info.value


def test_shipped_specs_load() -> None:
    names = {load_spec(p).name for p in sorted(images_dir().glob("*.yaml"))}
    assert {"pytorch-train", "pytorch-devel", "tensorflow-train", "jax-train"} <= names


def test_pytorch_train_is_the_field_guide_image() -> None:
    s = load_spec(images_dir() / "pytorch-train.yaml")
    assert s.framework == "torch"
    assert s.companions == ("torchvision",)
    assert {r.split(">")[0] for r in s.requirements} == {"numpy", "pillow"}
    assert s.certify.level == "default"


def test_lists_are_sorted_and_deduplicated() -> None:
    s = spec(apt=["libgl1", "git", "git"], requirements=["pillow>=10", "Numpy>=1", "pillow>=10"])
    assert s.apt == ("git", "libgl1")
    assert s.requirements == ("Numpy>=1", "pillow>=10")


def test_request_from_spec() -> None:
    s = spec(python="3.11", strategy="system-cuda", flavor="devel")
    req = s.to_request(cpu_only=True)
    assert (req.framework, req.specifier, req.python) == ("torch", "==2.11.*", "3.11")
    assert (req.strategy, req.flavor, req.cpu_only) == ("system-cuda", "devel", True)


def test_error_names_file_field_and_value() -> None:
    err = refused(apt=["git", "curl; rm -rf /"])
    assert "images/test.yaml" in err.message
    assert "apt[1]" in err.message
    assert "curl; rm -rf /" in err.message
    assert err.hint


@pytest.mark.parametrize(
    "req",
    [
        "https://evil.example/x.whl",
        "pkg @ https://evil.example/pkg.whl",
        "./local/path",
        "/abs/path.whl",
        "-e .",
        "--index-url=https://x",
        "numpy\nRUN curl evil",
        "numpy && curl evil",
        "numpy|sh",
        "numpy`id`",
        "numpy$(id)",
        "numpy\\",
        'numpy"',
        "numpy'",
        "numpy #comment",
        "numpy\x00",
        "numpy\u2028RUN x",
        "numpy>=1; python_version>'3' ; os_name=='nt'",
        "numpy (>=1.0)",
        "numpy  >=1",
        "",
        # set O's survivor O27: what packaging shortens (a repeated specifier or extra) does not
        # round-trip, though the characters left are the same set
        "numpy>=1,>=1,<2",
        "uvicorn[standard,standard,a]",
    ],
)
def test_hostile_requirements_refused(req: str) -> None:
    err = refused(requirements=[req])
    assert "requirements[0]" in err.message


@pytest.mark.parametrize(
    ("req", "canonical"),
    [
        ("numpy", "numpy"),
        ("numpy>=1.26", "numpy>=1.26"),
        ("numpy>=1.26,<3", "numpy<3,>=1.26"),
        ("uvicorn[standard]>=0.30", "uvicorn[standard]>=0.30"),
        ("numpy; python_version >= '3.10'", 'numpy; python_version >= "3.10"'),
        ('numpy==2.1.*;python_version>"3.9"', 'numpy==2.1.*; python_version > "3.9"'),
    ],
)
def test_valid_requirements_are_canonical(req: str, canonical: str) -> None:
    assert spec(requirements=[req]).requirements == (canonical,)


def test_framework_and_companions_cannot_be_requirements() -> None:
    assert "pinned by the stack" in refused(requirements=["torch>=2"]).message
    assert "pinned by the stack" in refused(requirements=["TorchVision"]).message


@pytest.mark.parametrize(
    "name", ["Git", "g", "git curl", "git\n", "-x", "git=1.0 evil", "git=", "gi$t", "git;ls"]
)
def test_hostile_apt_names_refused(name: str) -> None:
    refused(apt=[name])


def test_apt_version_pin_allowed() -> None:
    assert spec(apt=["git=1:2.39.5-0+deb12u1"]).apt == ("git=1:2.39.5-0+deb12u1",)


@pytest.mark.parametrize(
    "key",
    [
        "lower",
        "1X",
        "A-B",
        "A B",
        "X\nRUN",
        "PATH",
        "LD_LIBRARY_PATH",
        "NVIDIA_REQUIRE_CUDA",
        # every NVIDIA_* steers the Container Toolkit, not only the two of the driver check
        # (set S's S01 refused NVIDIA_DISABLE_REQUIRE and NVIDIA_REQUIRE_CUDA alone)
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
        "NVIDIA_REQUIRE_DRIVER",
        "ENVBUILDER_HARNESS",
        "A" * 65,
    ],
)
def test_bad_env_keys_refused(key: str) -> None:
    refused(env={key: "1"})


@pytest.mark.parametrize("value", ["a\nRUN x", 'a"b', "a\\b", "$HOME", "`id`", "\x7f", "é", True, 1.5])
def test_bad_env_values_refused(value: object) -> None:
    refused(env={"X": value})


def test_env_int_becomes_string() -> None:
    assert spec(env={"OMP_NUM_THREADS": 8}).env == (("OMP_NUM_THREADS", "8"),)


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "Bad Name"},
        {"name": None},
        {"framework": "torch[extra]==2.11"},
        {"framework": "torch; python_version>'3'"},
        {"python": 3.12},
        {"python": "3"},
        {"strategy": "docker"},
        {"flavor": "base"},
        {"flavor": "devel"},  # devel without system-cuda
        {"companions": ["Torch Vision"]},
        {"user": {"name": "root!", "uid": 1000}},
        {"user": {"uid": 0}},
        {"user": {"uid": "1000"}},
        {"user": {"gid": 5}},
        {"workdir": "relative"},
        {"workdir": "/a/../etc"},
        {"workdir": "/app/.."},  # set R's R05: a `..` at the end, not between two names
        {"workdir": "/a b"},
        {"certify": {"level": "extreme"}},
        {"certify": {"thresholds": {"min_tflops": -1}}},
        {"certify": {"thresholds": {"min_tflops": float("nan")}}},
        {"certify": {"bogus": 1}},
        {"description": "two\nlines"},
        {"description": "tab\there"},
        {"description": "x" * 1001},
        {"source": "http://insecure.example"},
        {"requirements": "../outside.txt"},
        {"requirements": "/etc/passwd"},
        {"requirements": 5},
        {"pyproject": {"path": "pyproject.toml", "groups": ["x"]}},
        {"pyproject": "pyproject.toml", "uv_lock": "uv.lock"},
        {"pyproject": {"path": "pyproject.toml", "extras": ["bad extra"]}},
        {"indexes": {"name": "x"}},
        {"indexes": [{"name": "x", "url": "https://user:token@pkgs.example/simple"}]},
        {"indexes": [{"name": "x", "url": "http://pkgs.example/simple"}]},
        {"indexes": [{"name": "x", "url": "https://pkgs.example/simple?token=1"}]},
        {"indexes": [{"name": "pypi", "url": "https://pkgs.example/simple"}]},
        {"indexes": [{"name": "a", "url": "https://a.example"}, {"name": "a", "url": "https://b.example"}]},
        {"indexes": [{"name": "a", "url": "https://a.example", "password": "x"}]},
        {"indexes": [{"name": "a", "url": "https://a.example", "secret": "a,src=/etc/shadow"}]},
        {"context": "../up"},
        {"context": "sub/../../up"},
        {"requirements": "deps/../../outside.txt"},
        {"context": "/abs"},
        {"cmd": []},
        {"cmd": ["python", "a\nRUN evil"]},
        {"cmd": "python 'unclosed"},
        {"entrypoint": [1, 2]},
        {"installer": "conda"},
        {"requirements": [f"pkg{i}" for i in range(201)]},
        {"unknown_field": 1},
        {"schema_version": 2},
    ],
)
def test_bad_fields_refused(fields: dict[str, Any]) -> None:
    refused(**fields)


def test_free_text_takes_any_printable_unicode() -> None:
    text = 'the H200 machine\'s own environment: "quoted", $HOME, `tick`, \\, é, 日本, \U0001f600'
    assert spec(description=text).description == text


def test_project_inputs_round_trip_through_to_dict(tmp_path: Path) -> None:
    s = spec(
        requirements="requirements.txt",
        pyproject={"path": "sub/pyproject.toml", "extras": ["train", "eval", "train"]},
        indexes=[{"name": "internal", "url": "https://pkgs.example/simple", "username": "__token__",
                  "secret": "internal-token"}],
        context=".",
        cmd="python train.py --epochs 3",
        entrypoint=["/bin/sh", "-c"],
        installer="pip",
    )  # fmt: skip
    assert s.requirements_file == "requirements.txt" and s.requirements == ()
    assert s.pyproject is not None and s.pyproject.extras == ("eval", "train")
    assert s.cmd == ("python", "train.py", "--epochs", "3")
    assert s.indexes[0].env_prefix == "UV_INDEX_INTERNAL"
    assert parse_spec(s.to_dict(), s.path).to_dict() == s.to_dict()
    assert "installer" not in spec().to_dict() and "cmd" not in spec().to_dict()


def test_load_spec_checks_the_files_it_names(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("name: x\nframework: torch\nrequirements: requirements.txt\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"'requirements': 'requirements\.txt' is not a file"):
        load_spec(path)
    (tmp_path / "requirements.txt").write_text("six\n", encoding="utf-8")
    assert load_spec(path).base_dir == str(tmp_path)


def test_a_context_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """`context:` is the project folder copied into the image: a file of that name is refused at
    load, as a missing folder is (set R's R04: `.exists()` took the file)."""
    path = tmp_path / "x.yaml"
    path.write_text("name: x\nframework: torch\ncontext: project\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"field 'context': 'project' is not a folder"):
        load_spec(path)
    (tmp_path / "project").write_text("a file, not a folder\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"field 'context': 'project' is not a folder"):
        load_spec(path)
    (tmp_path / "project").unlink()
    (tmp_path / "project").mkdir()
    assert load_spec(path).context == "project"


def test_certify_thresholds() -> None:
    s = spec(certify={"level": "quick", "thresholds": {"min_tflops": 300, "max_step_ms": 2.5}})
    assert s.certify.level == "quick"
    assert s.certify.thresholds == (("max_step_ms", 2.5), ("min_tflops", 300.0))


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(bad)
    bad.write_text("- a list\n", encoding="utf-8")
    with pytest.raises(SpecError, match="not an image spec: the file holds a YAML list, not a mapping"):
        load_spec(bad)


def test_to_dict_is_canonical() -> None:
    a = parse_spec({"name": "x", "framework": "jax", "apt": ["b-1", "a-1"]})
    b = parse_spec({"name": "x", "framework": "jax", "apt": ["a-1", "b-1"]}, "elsewhere.yaml")
    assert a.to_dict() == b.to_dict()


# --------------------------------------------------------------------------- set Q's survivors


def test_the_framework_and_companions_are_read_as_canonical_project_names() -> None:
    """`Torch`, `torch_audio` and `torch.vision` name the projects torch, torch-audio and
    torch-vision (PEP 503): the stack's companions are keyed by that name, so a spec that spells
    one otherwise gets the same image as one that spells it canonically."""
    s = parse_spec({"name": "x", "framework": "Torch==2.11.*", "companions": ["torch_audio", "torch.vision"]})
    assert s.framework == "torch" and s.specifier == "==2.11.*"
    assert s.companions == ("torch-audio", "torch-vision")
