"""The JSON Schema of an image spec, for editors (completion and checks as you type): built from
the loader's own field list and patterns (image/spec.py, image/sources.py), so the two cannot
drift apart; tests/unit/test_spec_schema.py holds both against the same valid and refused specs.

The loader stays the authority: it checks what a schema cannot say (a requirement's round trip
through packaging, reserved names, files that must exist beside the spec).
"""

from __future__ import annotations

import re
from typing import Any, get_args

from envbuilder.image import sources, spec
from envbuilder.matrix.model import Strategy

SCHEMA_ID = "https://envbuilder.invalid/schemas/image-spec-1.json"  # an identifier, never fetched


def _pattern(regex: re.Pattern[str]) -> dict[str, str]:
    return {"type": "string", "pattern": regex.pattern}


def _rel_path(description: str) -> dict[str, Any]:
    return {
        "type": "string",
        "description": description,
        "anyOf": [{"const": "."}, {"pattern": sources.REL_PATH_RE.pattern}],
        "maxLength": spec.MAX_REL_PATH,
    }


def _project_file(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "oneOf": [
            _rel_path("the file, relative to the spec"),
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["path"],
                "properties": {
                    "path": _rel_path("the file, relative to the spec"),
                    "extras": {"type": "array", "items": _pattern(sources.EXTRA_RE)},
                },
            },
        ],
    }


def _argv(description: str) -> dict[str, Any]:
    word = {"type": "string", "maxLength": 4096}
    return {
        "description": description,
        "oneOf": [
            {"type": "array", "items": word, "minItems": 1, "maxItems": spec.MAX_ARGV},
            {"type": "string", "minLength": 1},
        ],
    }


def _smoke() -> dict[str, Any]:
    command = "the project's own smoke command (exec form), run in the image by certify"
    return {
        "description": f"{command}; a command, or command and timeout_s",
        "oneOf": [
            _argv(command),
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["command"],
                "properties": {
                    "command": _argv(command),
                    "timeout_s": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": spec.SMOKE_TIMEOUT_MAX_S,
                        "default": spec.SMOKE_TIMEOUT_S,
                        "description": "seconds before it is killed (a timeout fails certification)",
                    },
                },
            },
        ],
    }


def _string_list(item: dict[str, Any], description: str) -> dict[str, Any]:
    return {"type": "array", "items": item, "maxItems": spec.MAX_ITEMS, "description": description}


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of images/NAME.yaml, schema_version 1."""
    properties: dict[str, Any] = {
        "schema_version": {"const": spec.SCHEMA_VERSION, "description": "the spec format's version"},
        "name": {**_pattern(spec.NAME_RE), "description": "the image name (a Docker repository name)"},
        "description": {"type": "string", "maxLength": spec.MAX_DESCRIPTION, "description": "one line"},
        "source": {**_pattern(spec.SOURCE_RE), "description": "where the project lives (https URL)"},
        "framework": {
            "type": "string",
            "description": "the framework and a PEP 440 specifier: 'torch==2.11.*', 'jax>=0.5', 'tensorflow'",
            "examples": ["torch", "torch==2.13.*", "jax>=0.5", "tensorflow==2.21.*"],
        },
        "python": {
            **_pattern(spec.PYTHON_RE),
            "description": "CPython X.Y, quoted; default: the newest that fits",
        },
        "strategy": {"enum": list(get_args(Strategy)), "description": "how CUDA gets into the image"},
        "flavor": {
            "enum": list(get_args(spec.SpecFlavor)),
            "description": "devel: an nvidia/cuda devel base",
        },
        "companions": _string_list(
            _pattern(spec.NAME_RE), "packages locked with the framework (torchvision)"
        ),
        "requirements": {
            "description": "PEP 508 requirements, or a requirements.txt beside the spec",
            "oneOf": [
                _string_list({"type": "string"}, "PEP 508 requirements"),
                _rel_path("a requirements file, relative to the spec"),
            ],
        },
        "pyproject": _project_file("a pyproject.toml whose dependencies are installed"),
        "uv_lock": _project_file("a uv.lock whose packages are installed"),
        "indexes": {
            "type": "array",
            "maxItems": spec.MAX_ITEMS,
            "description": "extra package indexes (credentials as build secrets, never in the URL)",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "url"],
                "properties": {
                    "name": _pattern(sources.INDEX_NAME_RE),
                    "url": _pattern(sources.INDEX_URL_RE),
                    "username": _pattern(sources.USERNAME_RE),
                    "secret": _pattern(sources.SECRET_ID_RE),
                },
            },
        },
        "apt": _string_list(_pattern(spec.APT_RE), "Debian packages, optionally =VERSION"),
        "env": {
            "type": "object",
            "description": "environment variables (NVIDIA_*, ENVBUILDER_*, PATH... are set by envbuilder)",
            "propertyNames": {
                "pattern": spec.ENV_KEY_RE.pattern,
                "not": {
                    "anyOf": [
                        {"pattern": f"^({spec.RESERVED_ENV_PREFIX}|ENVBUILDER_)"},
                        {"enum": sorted(spec.RESERVED_ENV)},
                    ]
                },
            },
            "additionalProperties": {"oneOf": [_pattern(spec.ENV_VALUE_RE), {"type": "integer"}]},
        },
        "user": {
            "type": "object",
            "additionalProperties": False,
            "description": "the non-root user the image runs as",
            "properties": {
                "name": _pattern(spec.USER_RE),
                "uid": {"type": "integer", "minimum": 1, "maximum": 65533},
            },
        },
        "workdir": {**_pattern(spec.WORKDIR_RE), "description": "absolute path; default /workspace"},
        "certify": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "level": {"enum": list(get_args(spec.CertifyLevel))},
                "thresholds": {
                    "type": "object",
                    "propertyNames": {"pattern": spec.THRESHOLD_KEY_RE.pattern},
                    "additionalProperties": {"type": "number", "minimum": 0},
                },
                "smoke": _smoke(),
            },
        },
        "context": _rel_path("the project folder copied into workdir"),
        "cmd": _argv("the image's command (exec form)"),
        "entrypoint": _argv("the image's entrypoint after envbuilder's driver check"),
        "installer": {"enum": list(get_args(spec.Installer)), "description": "uv (default) or pip"},
        "forward_compat": {
            "type": "boolean",
            "description": "allow CUDA forward compatibility (cuda-compat): data-center GPUs, system-cuda",
        },
    }
    assert set(properties) == spec.TOP_KEYS, "spec_schema and spec.TOP_KEYS differ"
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "envbuilder image spec",
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "framework"],
        "properties": properties,
    }
