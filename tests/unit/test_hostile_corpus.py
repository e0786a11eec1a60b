"""One hostile corpus for every value check at a trust boundary (issue 23, hardening).

Blind mutant sets p, q and r kept finding checks pinned by a few hand-picked examples only, so a
pattern loosened a new way (`==\\S+`, `.match` for `.fullmatch`, a widened character class,
`(sha256:)?`, `http://` admitted, `/..` at the end of a path) survived. Here every check that
guards an outside value on its way to a Dockerfile, a command line, a path or a trust decision
is driven through its public door the same way: a few honest values (what envbuilder itself
writes, what the docs show) must pass, and each honest value with each mutation of MUTATIONS
applied (plus the check's own: a number with a leading zero, a value just past its limit, a case
change where case matters, http:// where https:// is required) must be refused with the module's
error: its exit code and a one-line message. A mutation a check takes on purpose is listed in
that check's `accepted` with the reason.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from fake_engine import lock_doc
from render_cases import TORCH_BUNDLED_CU130, TORCH_SYSTEM_CU126
from render_cases import spec as render_spec

from envbuilder.atomic import check_output_path, make_output_dir
from envbuilder.attest.keys import check_name
from envbuilder.attest.policy import parse_duration
from envbuilder.certify.certificate import parse_timestamp
from envbuilder.errors import EnvbuilderError, OutputError, SigningKeyError, SpecError, UsageError
from envbuilder.host.probe import probe_proc
from envbuilder.image.lock import parse_lock
from envbuilder.image.render import RenderOptions, render_dockerfile
from envbuilder.image.secrets import is_secret_ref
from envbuilder.image.spec import load_spec, parse_spec
from envbuilder.image.validate import validate_stack
from envbuilder.imageref import check_registry, check_tag
from envbuilder.require_cuda import parse_require_cuda
from envbuilder.run.launch import (
    parse_env,
    parse_name,
    parse_publish,
    parse_size,
    parse_user,
    parse_workdir,
)
from envbuilder.versions import parse_cc, parse_host_driver, parse_python_xy, parse_version

# The same glyphs, other code points (Cyrillic): written as escapes, so no look-alike is in the source.
CYRILLIC = str.maketrans("aeopcxy", "\u0430\u0435\u043e\u0440\u0441\u0445\u0443")
SHA_A = "a" * 64


def _lookalike(v: str) -> str:
    out = v.translate(CYRILLIC)
    return out if out != v else v + "\u0430"


def _digit(v: str, zero: int) -> str:
    """The first ASCII digit as the same digit of another script (appended where there is none)."""
    for i, c in enumerate(v):
        if c.isascii() and c.isdigit():
            return v[:i] + chr(zero + int(c)) + v[i + 1 :]
    return v + chr(zero + 3)


# Each applied to every honest value of every check.
MUTATIONS: dict[str, Callable[[str], str]] = {
    "newline-end": lambda v: v + "\n",
    "newline-start": lambda v: "\n" + v,
    "newline-inside": lambda v: v[:1] + "\nRUN id\n" + v[1:],
    "cr-end": lambda v: v + "\r",
    "tab-end": lambda v: v + "\t",
    "space-end": lambda v: v + " ",
    "space-start": lambda v: " " + v,
    "semicolon": lambda v: v + ";id",
    "dollar-paren": lambda v: v + "$(id)",
    "backtick": lambda v: v + "`id`",
    "and-and": lambda v: v + "&&id",
    "double-quote": lambda v: v + '"',
    "single-quote": lambda v: v + "'",
    "nul": lambda v: v + "\x00",
    "hash": lambda v: v + "#x",
    "second-digest": lambda v: v + "@sha256:" + SHA_A + ("" if "@sha256:" in v else "@sha256:" + SHA_A),
    "dotdot-end": lambda v: v + "/..",
    "dotdot-inside": lambda v: v + "/../x",
    "dash-lead": lambda v: "-" + v,
    "lookalike": _lookalike,
    "arabic-indic-digit": lambda v: _digit(v, 0x660),
    "fullwidth-digit": lambda v: _digit(v, 0xFF10),
    "empty": lambda v: "",
}

# A door takes the value (and, for one that reads files, a scratch folder); one that has no
# exception to raise returns whether it took the value.
Door = Callable[..., object]


@dataclass(frozen=True)
class Check:
    door: Door
    honest: tuple[str, ...]
    error: type[EnvbuilderError] | None  # None: the door returns True when the value is taken
    extra: Mapping[str, str] = field(default_factory=dict)  # the check's own hostile values
    accepted: Mapping[str, str] = field(default_factory=dict)  # mutation -> why it is honest
    files: bool = False  # the door also takes tmp_path (it writes what it reads there)
    generic: bool = True  # MUTATIONS apply (not to a check of what kind of file is at a path)


# --------------------------------------------------------------------------- doors

FIRST_INDEX = {"name": "first", "url": "https://first.example/simple"}  # a list's value goes second
FIRST_URL = "https://files.example/f/filelock-4.3.1-py3-none-any.whl"
SPEC = {"schema_version": 1, "name": "smoke", "framework": "torch==2.13.0", "python": "3.11"}


def _spec(put: Callable[[dict[str, Any], str], None]) -> Door:
    def door(value: str) -> object:
        raw = copy.deepcopy(SPEC)
        put(raw, value)
        return parse_spec(raw, "images/smoke.yaml")

    return door


def _top(key: str) -> Door:
    return _spec(lambda raw, v: raw.update({key: v}))


def _stack(name: str, *, tuple_field: bool = False) -> Door:
    def door(value: str) -> object:
        # a tuple's hostile item second: a check of the first item only is no check
        changes: dict[str, Any] = {
            name: (getattr(TORCH_BUNDLED_CU130, name)[0], value) if tuple_field else value
        }
        validate_stack(replace(TORCH_BUNDLED_CU130, **changes))
        return None

    return door


LOCK = lock_doc()


def _lock(put: Callable[[dict[str, Any], str], None]) -> Door:
    def door(value: str) -> object:
        doc = copy.deepcopy(LOCK)
        put(doc, value)
        return parse_lock(doc, "smoke.lock.json")

    return door


def _pl(key: str) -> Door:
    return _lock(lambda d, v: d["packages"][0].update({key: v}))


def _render(options: Callable[[str], RenderOptions], stack: Any = TORCH_BUNDLED_CU130) -> Door:
    built = render_spec()

    def door(value: str) -> object:
        return render_dockerfile(built, stack(value) if callable(stack) else stack, options(value))

    return door


def _probe(value: str, tmp: Path) -> object:
    """A driver version as /sys/module/nvidia/version holds it: taken, or no driver at all."""
    (tmp / "sys/module/nvidia").mkdir(parents=True, exist_ok=True)
    (tmp / "sys/module/nvidia/version").write_text(value, encoding="utf-8")
    return not isinstance(probe_proc(tmp), str)


def _on_disk(key: str) -> Door:
    """A spec on disk naming `value` as `key`, beside a folder `src` and files `requirements.txt`
    and `notes.txt`: load_spec checks that a file is a file and a folder a folder."""

    def door(value: str, tmp: Path) -> object:
        (tmp / "src").mkdir(exist_ok=True)
        (tmp / "requirements.txt").write_text("pillow>=10\n", encoding="utf-8")
        (tmp / "notes.txt").write_text("x\n", encoding="utf-8")
        spec = tmp / "smoke.yaml"
        spec.write_text(json.dumps({**SPEC, key: value}), encoding="utf-8")  # JSON is YAML
        return load_spec(spec)

    return door


def _fs(check: Callable[[Path], object]) -> Door:
    """A path under tmp beside a folder `dir`, a file `file.txt`, and links to each."""

    def door(value: str, tmp: Path) -> object:
        (tmp / "dir").mkdir(exist_ok=True)
        (tmp / "file.txt").write_text("x", encoding="utf-8")
        for link, target in (("link", "file.txt"), ("linkdir", "dir")):
            if not (tmp / link).is_symlink():
                (tmp / link).symlink_to(tmp / target)
        return check(tmp / value)

    return door


def _publish_port(value: str) -> object:
    return parse_publish(f"{value}:80")


# --------------------------------------------------------------------------- the checks
ESCAPED = 'free text: render writes it as one double-quoted Dockerfile word, \\ " $ escaped'
EXEC_FORM = "an argument of CMD's exec form (a JSON array, no shell), any printable text"
IN_CONTAINER = "a folder inside the user's own container, one argv word of docker's -w (no shell)"
STRIPPED = "surrounding whitespace is stripped: what the parser returns has none"
CANONICAL = "packaging drops it: the spec keeps str(Requirement), which has none"
JOINED = "a name of a file beside the spec, joined to its folder by envbuilder, never an argv word"
USER_ENV = "a user name reaches uv as an environment variable's value, never as an argv word"
SECRET_TAIL = "a secret id is the tail of `id=` and of /run/secrets/, never an argv word"
RECORDED = "a lock records its find-links folders for the reader; no command reads them back"
FETCHED = "a wheel's URL is read by urllib (no shell, no Dockerfile) and the wheel checked by its sha256"
TOOLKIT = "read as the Container Toolkit reads it: an unknown property or an empty term is skipped"
SKIPPED = dict.fromkeys(
    ("newline-start", "space-end", "space-start", "dash-lead", "lookalike", "empty"), TOOLKIT
)
CONTROL = ("newline-end", "newline-start", "newline-inside", "cr-end", "tab-end", "nul")
WHITESPACE = ("newline-end", "newline-start", "cr-end", "tab-end", "space-end", "space-start")


CHECKS: dict[str, Check] = {
    # ---- the spec (images/NAME.yaml): SpecError, exit 10
    "spec.context(on disk)": Check(
        _on_disk("context"),
        ("src", "."),
        SpecError,
        {"file": "notes.txt", "missing": "nope"},
        files=True,
    ),
    "spec.requirements(on disk)": Check(
        _on_disk("requirements"),
        ("requirements.txt",),
        SpecError,
        {"folder": "src", "missing": "nope.txt", "spec-folder": "."},
        files=True,
    ),
    "spec.name": Check(
        _top("name"), ("smoke", "my-project.v2_1"), SpecError, {"upper": "Smoke", "long": "a" * 64}
    ),
    "spec.source": Check(
        _top("source"),
        ("https://github.com/org/repo", "https://git.example:8443/a/b.git"),
        SpecError,
        {
            "http": "http://github.com/org/repo",
            "query": "https://github.com/org/repo?token=x",
            "creds": "https://u:p@github.com/org",
        },
    ),
    "spec.description": Check(
        _top("description"),
        ("A training image", "Ünïcode, quotes \" ' and $HOME are text"),
        SpecError,
        {"long": "a" * 1001, "line-separator": "a\u2028b"},
        accepted={m: ESCAPED for m in MUTATIONS if m not in CONTROL},
    ),
    "spec.cmd[]": Check(
        _spec(lambda raw, v: raw.update({"cmd": ["python", v]})),
        ("train.py", "--epochs=3"),
        SpecError,
        {"long": "a" * 4097},
        accepted={m: EXEC_FORM for m in MUTATIONS if m not in CONTROL},
    ),
    "spec.python": Check(
        _top("python"), ("3.12", "3.9"), SpecError, {"zero": "03.12", "patch": "3.12.1", "two": "2.7"}
    ),
    "spec.framework": Check(
        _top("framework"),
        ("torch==2.11.*", "jax>=0.5"),
        SpecError,
        {"url": "torch @ https://x/t.whl", "long": "torch==" + "1" * 200},
        accepted={"space-end": CANONICAL},
    ),
    "spec.requirements[]": Check(
        _spec(lambda raw, v: raw.update({"requirements": ["attrs>=23", v]})),
        ("pillow>=10", "numpy==2.1.*", "pywin32>=306; sys_platform == 'win32'"),
        SpecError,
        {
            "url": "pkg @ https://x/p.whl",
            "path": "./local",
            "option": "--index-url=https://evil",
            "long": "a" * 201,
        },
        accepted={"space-end": CANONICAL},
    ),
    "spec.companions[]": Check(
        _spec(lambda raw, v: raw.update({"companions": ["torchaudio", v]})),
        ("torchvision",),
        SpecError,
        {"upper": "TorchVision"},
    ),
    "spec.apt[]": Check(
        _spec(lambda raw, v: raw.update({"apt": ["curl", v]})),
        ("libgl1", "git=1:2.39.5-0+deb12u1"),
        SpecError,
        {"upper": "LibGL1", "option": "-o=APT::x", "long": "a" * 64},
    ),
    "spec.env.KEY": Check(
        _spec(lambda raw, v: raw.update({"env": {"AN_HONEST_KEY": "1", v: "1"}})),
        ("MY_FLAG", "HF_HOME"),
        SpecError,
        {"lower": "my_flag", "reserved": "PATH", "nvidia": "NVIDIA_DISABLE_REQUIRE", "long": "A" * 65},
    ),
    "spec.env.VALUE": Check(
        _spec(lambda raw, v: raw.update({"env": {"MY_FLAG": v}})),
        ("1", "hello world", "/data/cache"),
        SpecError,
        {"long": "a" * 4097},
        accepted={
            "space-end": "a value is written double-quoted: spaces are its own",
            "space-start": "a value is written double-quoted: spaces are its own",
            "semicolon": "inside double quotes `;` is a character, no shell reads ENV",
            "and-and": "inside double quotes `&` is a character",
            "single-quote": "inside double quotes `'` is a character",
            "hash": "inside double quotes `#` starts no comment",
            "second-digest": "`@` and `:` are characters of a quoted value",
            "dotdot-end": "a value, not a path envbuilder opens",
            "dotdot-inside": "a value, not a path envbuilder opens",
            "dash-lead": "a value, not an option",
            "empty": "an empty variable is a variable",
        },
    ),
    "spec.user.name": Check(
        _spec(lambda raw, v: raw.update({"user": {"name": v}})),
        ("trainer", "envbuilder"),
        SpecError,
        {"upper": "Trainer", "long": "a" * 33},
    ),
    "spec.workdir": Check(
        _top("workdir"),
        ("/workspace", "/opt/app"),
        SpecError,
        {"relative": "workspace", "dotdot-only": "/.."},
    ),
    "spec.certify.thresholds.KEY": Check(
        _spec(lambda raw, v: raw.update({"certify": {"thresholds": {v: 1.0}}})),
        ("matmul_tflops", "nccl.busbw"),
        SpecError,
        {"upper": "Matmul", "long": "a" * 65},
    ),
    "spec.requirements(file)": Check(
        _top("requirements"),
        ("requirements.txt", "deps/base.txt"),
        SpecError,
        # parse_spec only reads the dict: no file is opened, let alone written
        {"absolute": "/nonexistent/requirements.txt", "dotdot-lead": "../x.txt", "long-name": "a" * 256},
        accepted={"dash-lead": JOINED},
    ),
    "spec.context": Check(
        _top("context"),
        (".", "src"),
        SpecError,
        {"absolute": "/", "dotdot": "..", "dotdot-lead": "../other"},
        accepted={"dash-lead": JOINED},
    ),
    "spec.pyproject.extras[]": Check(
        _spec(lambda raw, v: raw.update({"pyproject": {"path": "pyproject.toml", "extras": ["docs", v]}})),
        ("dev", "gpu_extra"),
        SpecError,
        {"long": "a" * 65},
    ),
    "spec.indexes.url": Check(
        _spec(lambda raw, v: raw.update({"indexes": [FIRST_INDEX, {"name": "corp", "url": v}]})),
        ("https://pkgs.example/simple", "http://127.0.0.1:8080/simple"),
        SpecError,
        {
            "http": "http://pkgs.example/simple",
            "query": "https://pkgs.example/simple?token=x",
            "creds": "https://u:t@pkgs.example/simple",
            "token-creds": "https://t0ken@pkgs.example/simple",  # a token alone: no `:` before the `@`
            "shell-host": "https://$(id).pkgs.example/simple",
            "file": "file:///srv/wheels",
        },
    ),
    "spec.indexes.name": Check(
        _spec(
            lambda raw, v: raw.update(
                {"indexes": [FIRST_INDEX, {"name": v, "url": "https://pkgs.example/simple"}]}
            )
        ),
        ("corp", "team-a"),
        SpecError,
        {"upper": "Corp", "reserved": "pypi", "long": "a" * 33},
    ),
    "spec.indexes.username": Check(
        _spec(
            lambda raw, v: raw.update(
                {
                    "indexes": [
                        FIRST_INDEX,
                        {"name": "corp", "url": "https://pkgs.example/simple", "username": v},
                    ]
                }
            )
        ),
        ("__token__", "ci.bot@example.com"),
        SpecError,
        {"long": "a" * 129},
        accepted={"dash-lead": USER_ENV},
    ),
    "spec.indexes.secret": Check(
        _spec(
            lambda raw, v: raw.update(
                {
                    "indexes": [
                        FIRST_INDEX,
                        {"name": "corp", "url": "https://pkgs.example/simple", "secret": v},
                    ]
                }
            )
        ),
        ("corp_token", "tok"),
        SpecError,
        {"long": "a" * 65, "dot": ".", "dotdot": ".."},
        accepted={"dash-lead": SECRET_TAIL},
    ),
    # ---- the stack as a lock carries it (validate_stack): SpecError, exit 10
    "stack.id": Check(
        _stack("id"), ("torch2.11.0-cu130-py3.12-bundled-debian12",), SpecError, {"long": "a" * 129}
    ),
    "stack.framework": Check(_stack("framework"), ("torch", "jax"), SpecError, {"long": "a" * 129}),
    "stack.version": Check(_stack("version"), ("2.11.0", "0.5.0+cuda"), SpecError, {"long": "1" * 129}),
    "stack.nccl": Check(_stack("nccl"), ("2.28.9",), SpecError, {"five-parts": "2.28.9.1.1"}),
    "stack.ptx[]": Check(_stack("ptx", tuple_field=True), ("12.0",), SpecError, {"compute": "compute_120"}),
    "stack.python_install": Check(_stack("python_install"), ("apt", "present"), SpecError, {"upper": "Apt"}),
    "stack.companions.pin": Check(
        lambda v: validate_stack(
            replace(
                TORCH_BUNDLED_CU130, companions=(("torchaudio", "torchaudio==2.11.0"), ("torchvision", v))
            )
        ),
        ("torchvision==0.26.0",),
        SpecError,
        {"range": "torchvision>=0.26"},
    ),
    "stack.variant": Check(_stack("variant"), ("cu130", "cpu"), SpecError, {"long": "a" * 129}),
    "stack.os": Check(_stack("os"), ("debian12", "ubuntu24.04"), SpecError),
    "stack.base_image": Check(
        _stack("base_image"),
        (
            "python:3.12-slim-bookworm",
            "nvidia/cuda:12.6.3-runtime-ubuntu24.04",
            "nvcr.io/nvidia/pytorch:25.01-py3@sha256:" + "b" * 64,
        ),
        SpecError,
        {
            "upper-hex": "python:3.12@sha256:" + "B" * 64,
            "upper-name": "Python:3.12",
            "option": "--platform=x",
            "long-tag": "python:" + "a" * 129,
        },
    ),
    "stack.index_url": Check(
        _stack("index_url"),
        ("https://download.pytorch.org/whl/cu130", "http://localhost:3141/simple"),
        SpecError,
        {
            "http": "http://download.pytorch.org/whl/cu130",
            "query": "https://x.org/s?t=1",
            "creds": "https://u:p@x.org/s",
            "token-creds": "https://t0ken@x.org/s",
            "quote-host": 'https://x"y.org/s',
            "http-lookalike-loopback": "http://127.0.0.1.evil.org/s",
        },
    ),
    "stack.python": Check(_stack("python"), ("3.12", "3.9"), SpecError, {"zero": "03.12", "patch": "3.12.1"}),
    "stack.cuda": Check(_stack("cuda"), ("13.0", "12.6"), SpecError, {"five-parts": "1.2.3.4.5"}),
    "stack.cudnn": Check(_stack("cudnn"), ("9.15.1.9",), SpecError),
    "stack.min_driver": Check(
        _stack("min_driver"), ("580.65.06", "470"), SpecError, {"short": "58", "four-parts": "580.1.2.3"}
    ),
    "stack.require_cuda": Check(
        _stack("require_cuda"),
        ("cuda>=13.0", "12.6", "cuda>=12.6 brand=tesla,driver>=470,driver<471"),
        SpecError,
        {"upper": "CUDA>=13.0", "unknown-term": "cuda>=13.0 x=1"},
    ),
    "stack.sass[]": Check(
        _stack("sass", tuple_field=True),
        ("8.6", "10.0"),
        SpecError,
        {"three-digits": "100.0", "sm": "sm_86", "suffix": "9.0a", "two-digit-minor": "9.10"},
    ),
    "stack.strategy": Check(_stack("strategy"), ("bundled", "system-cuda"), SpecError, {"upper": "Bundled"}),
    "stack.packages[]": Check(
        _stack("packages", tuple_field=True),
        ("torch==2.11.0", "jax[cuda12]==0.5.0", "torch==2.11.0+cu130"),
        SpecError,
        {
            "range": "torch>=2",
            "url": "torch @ https://x/t.whl",
            "option": "--index-url=https://evil",
            "space-pin": "torch== 2.11.0",
        },
    ),
    "stack.companions.name": Check(
        lambda v: validate_stack(
            replace(
                TORCH_BUNDLED_CU130,
                companions=(("torchaudio", "torchaudio==2.11.0"), (v, "torchvision==0.26.0")),
            )
        ),
        ("torchvision",),
        SpecError,
    ),
    # ---- the rest of a lock file (parse_lock): SpecError, exit 10
    "lock.build.base_image": Check(
        _lock(lambda d, v: d["build"].update({"base_image": v})),
        ("python:3.11-slim-bookworm",),
        SpecError,
        {"option": "--platform=x"},
    ),
    "lock.build.base_image_digest": Check(
        _lock(lambda d, v: d["build"].update({"base_image_digest": v})),
        ("python:3.11-slim-bookworm@sha256:" + "2" * 64, "sha256:" + "2" * 64),
        SpecError,
        {
            "no-digest": "python:3.11-slim-bookworm",
            "upper-hex": "sha256:" + "A" * 64,
            "short": "sha256:" + "2" * 63,
            "long": "sha256:" + "2" * 65,
            "sha512": "sha512:" + "2" * 64,
        },
    ),
    "lock.build.image_id": Check(
        _lock(lambda d, v: d["build"].update({"image_id": v})),
        ("sha256:" + "1" * 64,),
        SpecError,
        {"upper-hex": "sha256:" + "A" * 64, "bare": "1" * 64, "short": "sha256:" + "1" * 63},
    ),
    "lock.build.dockerfile_sha256": Check(
        _lock(lambda d, v: d["build"].update({"dockerfile_sha256": v})),
        ("3" * 64,),
        SpecError,
        {"upper-hex": "A" * 64, "prefixed": "sha256:" + "3" * 64, "long": "3" * 65},
    ),
    "lock.stack.index_url": Check(
        _lock(lambda d, v: d["stack"].update({"index_url": v})),
        ("https://download.pytorch.org/whl/cpu",),
        SpecError,
        {"http": "http://download.pytorch.org/whl/cpu"},
    ),
    "lock.packages.python": Check(_pl("python"), ("3.11",), SpecError, {"zero": "03.11"}),
    "lock.packages.python_platform": Check(
        _pl("python_platform"),
        ("x86_64-manylinux_2_28",),
        SpecError,
        {"other-arch": "aarch64-manylinux_2_28", "upper": "X86_64-manylinux_2_28"},
    ),
    "lock.packages.resolver": Check(
        _pl("resolver"), ("uv 0.13.9",), SpecError, {"two-spaces": "uv  0.13.9", "pip": "pip 24.0"}
    ),
    "lock.packages.find_links[]": Check(
        _lock(lambda d, v: d["packages"][0].update({"find_links": ["/srv/first", v]})),
        ("/srv/wheels", "/tmp/envbuilder-wheels/x86_64"),
        SpecError,
        {"relative": "srv/wheels", "url": "https://evil/wheels"},
        accepted={  # all but what is not an absolute path on one line
            m: RECORDED for m in MUTATIONS if m not in (*CONTROL, "space-start", "dash-lead", "empty")
        },
    ),
    "lock.packages.inputs.FILE": Check(
        _lock(lambda d, v: d["packages"][0].update({"inputs": {"first.txt": "4" * 64, v: "4" * 64}})),
        ("requirements.txt", "deps/base.txt"),
        SpecError,
        {"absolute": "/nonexistent/requirements.txt", "dotdot": "../x"},  # parse_lock reads no file
        accepted={"dash-lead": JOINED},
    ),
    "lock.packages.inputs.DIGEST": Check(
        _lock(lambda d, v: d["packages"][0].update({"inputs": {"requirements.txt": v}})),
        ("4" * 64,),
        SpecError,
        {"upper-hex": "A" * 64, "prefixed": "sha256:" + "4" * 64},
    ),
    "lock.packages.default_index": Check(
        _pl("default_index"),
        ("https://pypi.org/simple", "<secret:corp_index>"),
        SpecError,
        {"http": "http://pypi.org/simple", "secret-long": "<secret:" + "a" * 65 + ">"},
    ),
    "lock.packages.indexes.url": Check(
        _lock(lambda d, v: d["packages"][0]["indexes"][0].update({"url": v})),
        ("https://pkgs.example/simple",),
        SpecError,
        {"http": "http://pkgs.example/simple", "secret-ref": "<secret:tok>"},
    ),
    "lock.packages.indexes.name": Check(
        _lock(lambda d, v: d["packages"][0]["indexes"][0].update({"name": v})),
        ("corp",),
        SpecError,
        {"upper": "Corp", "reserved": "framework"},
    ),
    "lock.packages.indexes.username": Check(
        _lock(lambda d, v: d["packages"][0]["indexes"][0].update({"username": v})),
        ("u", "__token__"),
        SpecError,
        accepted={"dash-lead": USER_ENV},
    ),
    "lock.packages.indexes.secret": Check(
        _lock(lambda d, v: d["packages"][0]["indexes"][0].update({"secret": v})),
        ("tok",),
        SpecError,
        accepted={"dash-lead": SECRET_TAIL},
    ),
    "lock.packages.packages.name": Check(
        _lock(lambda d, v: d["packages"][0]["packages"][0].update({"name": v})),
        ("filelock",),
        SpecError,
        {"upper": "FileLock", "underscore": "file_lock"},
    ),
    "lock.packages.packages.version": Check(
        _lock(lambda d, v: d["packages"][0]["packages"][0].update({"version": v})),
        ("4.3.1",),
        SpecError,
        {"long": "1" * 65, "not-pep440": "4.3.1-rc-x-y"},
    ),
    "lock.packages.packages.wheel": Check(
        _lock(lambda d, v: d["packages"][0]["packages"][0].update({"wheel": v})),
        ("filelock-4.3.1-py3-none-any.whl",),
        SpecError,
        {
            "no-tags": "filelock.whl",
            "tar": "filelock-4.3.1.tar.gz",
            "slash": "x/filelock-4.3.1-py3-none-any.whl",
        },
    ),
    "lock.packages.packages.sha256": Check(
        _lock(lambda d, v: d["packages"][0]["packages"][0].update({"sha256": v})),
        ("1" * 64,),
        SpecError,
        {"upper-hex": "A" * 64, "prefixed": "sha256:" + "1" * 64},
    ),
    "lock.packages.packages.urls[]": Check(
        _lock(lambda d, v: d["packages"][0]["packages"][0].update({"urls": [FIRST_URL, v]})),
        (
            "file:///wheelhouse/filelock-4.3.1-py3-none-any.whl",
            "https://files.example/f/filelock-4.3.1-py3-none-any.whl",
        ),
        SpecError,
        {"ftp": "ftp://x/f.whl", "long": "https://x/" + "a" * 2000},
        accepted=dict.fromkeys(
            (
                "semicolon",
                "dollar-paren",
                "backtick",
                "and-and",
                "double-quote",
                "single-quote",
                "hash",
                "second-digest",
                "dotdot-end",
                "dotdot-inside",
            ),
            FETCHED,
        ),
    ),
    # ---- render's own inputs (CLI options): SpecError, exit 10
    "render.base_venv": Check(
        _render(lambda v: RenderOptions(base_venv=v)),
        ("/opt/venv", "/opt/torch/.venv"),
        SpecError,
        {"relative": "opt/venv", "root": "/"},
    ),
    "render.base_image": Check(
        _render(lambda v: RenderOptions(base_image=v)),
        ("gpu-host-env:latest", "localhost:5000/team/base:1"),
        SpecError,
        {"upper": "GPU-host:latest"},
        accepted={"empty": "an empty --base-image is no override (the default)"},
    ),
    "render.labels.KEY": Check(
        _render(lambda v: RenderOptions(labels=(("org.example.first", "x"), (v, "x")))),
        ("org.example.team", "owner"),
        SpecError,
        {"upper": "Owner", "envbuilder": "io.envbuilder.stack", "long": "a" * 129},
    ),
    "render.labels.VALUE": Check(
        _render(lambda v: RenderOptions(labels=(("org.example.team", v),))),
        ("ml-platform", 'Ünïcode, "quotes" and $HOME'),
        SpecError,
        {"long": "a" * 65537, "line-separator": "a\u2028b"},
        accepted={m: ESCAPED for m in MUTATIONS if m not in CONTROL},
    ),
    "render.forward_compat.package": Check(
        _render(
            lambda v: RenderOptions(),
            lambda v: replace(TORCH_SYSTEM_CU126, forward_compat=(v, "560.35.05"), min_driver="470"),
        ),
        ("cuda-compat-12-6", "cuda-compat-13-0"),
        SpecError,
        {"other-package": "cuda-toolkit-12-6", "three-digits": "cuda-compat-123-0"},
    ),
    "render.forward_compat.driver": Check(
        _render(
            lambda v: RenderOptions(),
            lambda v: replace(TORCH_SYSTEM_CU126, forward_compat=("cuda-compat-12-6", v), min_driver="470"),
        ),
        ("560.35.05", "580"),
        SpecError,
        {"short": "56"},
    ),
    # ---- secret references a lock records (a bool: taken or not)
    "secrets.is_secret_ref": Check(
        is_secret_ref,
        ("<secret:corp_index>", "<secret:a.b-c_d>"),
        None,
        {"long": "<secret:" + "a" * 65 + ">", "spaced": "<secret: x>"},
    ),
    # ---- image references and registries on the command line: UsageError, exit 2
    "imageref.check_tag": Check(
        check_tag,
        ("myorg/train:v1", "127.0.0.1:5000/team/train:v1", "registry.example.com/a/b"),
        UsageError,
        {"upper": "MyOrg/train:v1", "long": "a" * 256, "long-tag": "a:" + "a" * 129},
    ),
    "imageref.check_registry": Check(
        check_registry,
        ("127.0.0.1:5000", "ghcr.io/org"),
        UsageError,
        {"scheme": "https://ghcr.io", "long": "a" * 256},
    ),
    # ---- NVIDIA_REQUIRE_* as an image carries it: invalid is refused (a bool: valid or not)
    "require_cuda.parse": Check(
        lambda v: parse_require_cuda(v).invalid is None,
        ("cuda>=12.6", "cuda>=12.6 brand=tesla,driver>=470,driver<471", "cuda>=12.6,arch>=9.0"),
        None,
        {
            "zero": "cuda>=012.6",
            "no-op": "cuda12.6",
            "four-parts": "cuda>=12.6.1.1",
            "arch-suffix": "cuda>=12.6,arch>=9.0a",
            "driver-text": "cuda>=12.6 brand=tesla,driver>=470.x,driver<471",
        },
        accepted=SKIPPED,
    ),
    # ---- versions given on the command line: UsageError, exit 2
    "versions.parse_host_driver": Check(
        parse_host_driver,
        ("535.104.05", "580", "550.135"),
        UsageError,
        {"short": "58", "four-parts": "580.1.2.3", "long-part": "580.1234"},
        accepted=dict.fromkeys(WHITESPACE, STRIPPED),
    ),
    "versions.parse_version": Check(
        parse_version,
        ("12.4", "2.11.0"),
        UsageError,
        {"long-part": "1" * 13, "five-parts": "1.2.3.4.5"},
        accepted=dict.fromkeys(WHITESPACE, STRIPPED),
    ),
    "versions.parse_python_xy": Check(
        parse_python_xy,
        ("3.12", "3.9"),
        UsageError,
        {"patch": "3.12.1", "long": "3.123"},
        accepted=dict.fromkeys(WHITESPACE, STRIPPED),
    ),
    "versions.parse_cc": Check(
        parse_cc,
        ("8.6", "10.0"),
        UsageError,
        {"three-digits": "100.0", "sm": "sm_86"},
        accepted=dict.fromkeys(WHITESPACE, STRIPPED),
    ),
    # ---- host: the driver a probe reads (refused: no driver, the probe says why)
    "host.probe_proc(sys/module)": Check(
        _probe,
        ("550.54.14", "580.95.05\n"),
        None,
        {"short": "58", "four-parts": "580.1.2.3"},
        dict.fromkeys(WHITESPACE, STRIPPED),
        files=True,
    ),
    # ---- output paths (the output policy): OutputError, exit 18; what kind of file is there
    "atomic.check_output_path": Check(
        _fs(check_output_path),
        ("out.json", "file.txt"),
        OutputError,
        {
            "folder": "dir",
            "symlink": "link",
            "symlink-to-folder": "linkdir",
            "file-as-parent": "file.txt/out.json",
            "no-parent": "nope/out.json",
        },
        files=True,
        generic=False,
    ),
    "atomic.make_output_dir": Check(
        _fs(make_output_dir),
        ("newdir", "dir"),
        OutputError,
        {
            "file": "file.txt",
            "symlink-to-folder": "linkdir",
            "symlink-to-file": "link",
            "no-parent": "nope/newdir",
            "file-as-parent": "file.txt/newdir",
        },
        files=True,
        generic=False,
    ),
    # ---- trust: key names, a policy's max_age, a certificate's issued_at
    "attest.check_name": Check(
        check_name, ("default", "ci-2026.key_1"), SigningKeyError, {"long": "a" * 65, "dot-lead": ".hidden"}
    ),
    "attest.parse_duration": Check(
        parse_duration,
        ("30d", "12h", "45"),
        SigningKeyError,
        {"zero": "0", "negative": "-1d", "century": "5300w", "unit": "3y"},
        accepted=dict.fromkeys(WHITESPACE, STRIPPED),
    ),
    "certificate.parse_timestamp": Check(
        lambda v: parse_timestamp(v) is not None,
        ("2026-12-01T15:00:00Z", "2026-12-01T15:00:00.123456+01:00"),
        None,
        {
            "month-13": "2026-13-01T15:00:00Z",
            "no-zone": "2026-12-01T15:00:00",
            "space": "2026-12-01 15:00:00Z",
            "long-fraction": "2026-12-01T15:00:00.1234567Z",
        },
    ),
    # ---- run's options: UsageError, exit 2
    "run.parse_name": Check(
        parse_name, ("train-1", "job.a_b"), UsageError, {"one-char": "a", "long": "a" * 129}
    ),
    "run.parse_user": Check(
        parse_user,
        ("1000:1000", "trainer", "trainer:users"),
        UsageError,
        {"big-id": "4294967296", "three": "1:2:3"},
    ),
    "run.parse_env.KEY": Check(
        lambda v: parse_env([f"{v}=1"]), ("MY_FLAG", "cuda_visible"), UsageError, {"digit-lead": "1X"}
    ),
    "run.parse_publish.PORT": Check(
        _publish_port, ("8888", "5353"), UsageError, {"zero": "0", "big": "65536", "range": "80-90"}
    ),
    "run.parse_workdir": Check(
        parse_workdir,
        ("/workspace", "/data/run 1"),
        UsageError,
        {"relative": "workspace"},
        accepted={  # it refuses what would break the line (newline, CR, NUL) and a relative path
            m: IN_CONTAINER
            for m in MUTATIONS
            if m not in ("newline-end", "newline-start", "newline-inside", "cr-end", "nul")
            and m not in ("space-start", "dash-lead", "empty")
        },
    ),
    "run.parse_size": Check(
        parse_size,
        ("16g", "512m", "65536"),
        UsageError,
        {"zero": "0", "unit": "16t", "big": "9" * 21},
        accepted=dict.fromkeys(WHITESPACE, STRIPPED),
    ),
}


def _cases() -> list[Any]:
    out = []
    for name, check in CHECKS.items():
        for mutation in (*(MUTATIONS if check.generic else ()), *check.extra):
            out.append(pytest.param(name, mutation, id=f"{name}-{mutation}"))
    return out


def _taken(check: Check, value: str, tmp: Path) -> EnvbuilderError | None:
    """None where the door took `value`, else the error it raised (for a bool door, a stand-in)."""
    args = (value, tmp) if check.files else (value,)
    if check.error is None:
        return None if check.door(*args) else EnvbuilderError("refused")
    try:
        check.door(*args)
    except check.error as exc:
        return exc
    return None


@pytest.mark.parametrize("name", list(CHECKS))
def test_honest_values_pass(name: str, tmp_path: Path) -> None:
    check = CHECKS[name]
    for value in check.honest:
        assert _taken(check, value, tmp_path) is None, f"{name}: honest {value!r} refused"


@pytest.mark.parametrize(("name", "mutation"), _cases())
def test_hostile_values_are_refused(name: str, mutation: str, tmp_path: Path) -> None:
    check = CHECKS[name]
    values = (
        [check.extra[mutation]] if mutation in check.extra else [MUTATIONS[mutation](v) for v in check.honest]
    )
    for value in values:
        if value in check.honest:
            continue
        error = _taken(check, value, tmp_path)
        if mutation in check.accepted:
            assert error is None, (
                f"{name}: {value!r} listed as accepted ({check.accepted[mutation]}) but refused"
            )
            continue
        assert error is not None, f"{name}: hostile {value!r} ({mutation}) accepted"
        if check.error is not None:
            assert error.exit_code == check.error.exit_code
            assert str(error) and "\n" not in str(error) and "\r" not in str(error), repr(str(error))


def test_every_accepted_mutation_is_one_the_check_applies() -> None:
    for name, check in CHECKS.items():
        applied = {*(MUTATIONS if check.generic else ()), *check.extra}
        assert set(check.accepted) <= applied, f"{name}: {sorted(set(check.accepted) - applied)}"
