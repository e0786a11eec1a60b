"""The spec's JSON Schema (for editors) and the spec loader agree: every shipped spec passes both,
and each refused value is refused by both. The committed images/spec.schema.json is the generated
one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from envbuilder.errors import SpecError
from envbuilder.image.spec import TOP_KEYS, parse_spec
from envbuilder.image.spec_schema import spec_json_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = spec_json_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
BASE: dict[str, Any] = {"name": "demo", "framework": "torch==2.13.*"}

REFUSED: dict[str, dict[str, Any]] = {
    "unknown field": {"nmae": "x"},
    "name with upper case": {"name": "Demo"},
    "strategy": {"strategy": "conda"},
    "flavor": {"flavor": "slim"},
    "python X only": {"python": "3"},
    "python as a number": {"python": 3.11},
    "env NVIDIA_*": {"env": {"NVIDIA_DISABLE_REQUIRE": "1"}},
    "env ENVBUILDER_*": {"env": {"ENVBUILDER_X": "1"}},
    "env PATH": {"env": {"PATH": "/x"}},
    "env key lower case": {"env": {"foo": "1"}},
    "env value with $": {"env": {"FOO": "a$b"}},
    "user field unknown": {"user": {"name": "x", "home": "/x"}},
    "uid 0": {"user": {"uid": 0}},
    "certify level": {"certify": {"level": "full"}},
    "negative threshold": {"certify": {"thresholds": {"resnet.min": -1}}},
    "smoke empty": {"certify": {"smoke": []}},
    "smoke not a command": {"certify": {"smoke": 3}},
    "smoke field unknown": {"certify": {"smoke": {"command": ["true"], "shell": True}}},
    "smoke without command": {"certify": {"smoke": {"timeout_s": 10}}},
    "smoke timeout 0": {"certify": {"smoke": {"command": ["true"], "timeout_s": 0}}},
    "smoke timeout too long": {"certify": {"smoke": {"command": ["true"], "timeout_s": 86400}}},
    "smoke timeout a float": {"certify": {"smoke": {"command": ["true"], "timeout_s": 1.5}}},
    "smoke timeout a boolean": {"certify": {"smoke": {"command": ["true"], "timeout_s": True}}},
    "apt name": {"apt": ["Lib GL"]},
    "index field unknown": {"indexes": [{"name": "x", "url": "https://a.example/simple", "token": "t"}]},
    "index name": {"indexes": [{"name": "X Y", "url": "https://a.example/simple"}]},
    "empty cmd": {"cmd": []},
    "installer": {"installer": "conda"},
    "forward_compat not a boolean": {"forward_compat": "yes"},
    "workdir relative": {"workdir": "work"},
    "context absolute": {"context": "/etc"},
    "requirements file absolute": {"requirements": "/tmp/r.txt"},
    "schema_version 2": {"schema_version": 2},
    "no framework": {"framework": None},
}


def test_the_schema_names_every_field_the_loader_reads() -> None:
    assert set(SCHEMA["properties"]) == TOP_KEYS
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", sorted((ROOT / "images").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_spec_passes_the_schema(path: Path) -> None:
    VALIDATOR.validate(yaml.safe_load(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_by_the_loader_and_by_the_schema(case: str) -> None:
    doc = {**BASE, **REFUSED[case]}
    doc = {k: v for k, v in doc.items() if v is not None}
    assert not VALIDATOR.is_valid(doc), case
    with pytest.raises(SpecError):
        parse_spec(doc, "spec.yaml", base_dir=Path("/nonexistent-base"))


def test_a_full_spec_passes_both() -> None:
    doc = {
        **BASE,
        "schema_version": 1,
        "python": "3.12",
        "strategy": "bundled",
        "companions": ["torchvision"],
        "requirements": ["numpy>=2"],
        "apt": ["libgl1"],
        "env": {"OMP_NUM_THREADS": 4, "HF_HOME": "/cache"},
        "user": {"name": "trainer", "uid": 1001},
        "workdir": "/workspace",
        "certify": {
            "level": "quick",
            "thresholds": {"resnet.min": 0.5},
            "smoke": {"command": ["python", "-m", "demo.smoke"], "timeout_s": 120},
        },
        "indexes": [{"name": "corp", "url": "https://pypi.corp.example/simple", "username": "__token__"}],
        "cmd": ["python", "train.py"],
        "entrypoint": "python -u",
        "installer": "pip",
        "forward_compat": True,
    }
    VALIDATOR.validate(doc)
    parse_spec(doc, "spec.yaml", base_dir=Path("/nonexistent-base"))


def test_the_committed_golden_schema_is_the_generated_one(update_golden: bool) -> None:
    path = ROOT / "images" / "spec.schema.json"
    if update_golden:
        path.write_text(json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == SCHEMA, "regenerate it: make golden"


@pytest.mark.parametrize(
    "smoke",
    [["python", "-c", "import demo"], "python -m demo.smoke --steps 1", {"command": "python -m demo"}],
    ids=["list", "string", "mapping"],
)
def test_each_form_of_the_smoke_command_passes_both(smoke: object) -> None:
    doc = {**BASE, "certify": {"smoke": smoke}}
    VALIDATOR.validate(doc)
    parsed = parse_spec(doc, "spec.yaml", base_dir=Path("/nonexistent-base"))
    assert parsed.certify.smoke is not None and parsed.certify.smoke.timeout_s == 300
