"""Issue 18, defect 6: bad values are refused where they are read (the command line, the spec),
with their own message and exit code, before anything is resolved, built or started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from render_cases import spec

from envbuilder.cli import cli
from envbuilder.errors import SpecError, UsageError
from envbuilder.imageref import check_registry, check_tag
from envbuilder.registry import parse_reference
from envbuilder.resources import images_dir
from envbuilder.run.launch import parse_size, parse_workdir

SPEC = str(images_dir() / "jax-train.yaml")


def invoke(*args: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tag", "team/train:v1\n"], "--tag 'team/train:v1\\n' is not a valid image reference"),
        (["--tag", "a" * 256], "is not a valid image reference"),
        (["--tag", "Team/train:v1"], "--tag 'Team/train:v1' is not a valid image reference"),
        (["--tag", "team/train:v1 "], "is not a valid image reference"),
        (["--tag", "localhost:\u0665\u0660\u0660\u0660/train:v1"], "is not a valid image reference"),
        (["--push", "127.0.0.1:5000\n"], "--push '127.0.0.1:5000\\n' is not a registry address"),
        (["--push", "127.0.0.1:\u0665\u0660\u0660\u0660"], "is not a registry address"),
        (["--push", "x" * 300], "is not a registry address"),
    ],
)
def test_build_refuses_a_bad_tag_or_registry_before_resolving(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: these got past the command line and failed later (after resolving: here exit 4,
    # no compatible stack for this GPU-less host; on a GPU host only after the build).
    res = invoke("build", SPEC, *args, tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert res.exit_code == 2, res.output
    assert res.output.startswith("envbuilder: error: --") and message in res.output
    assert "hint: " in res.output
    assert "no compatible" not in res.output


def test_the_reference_grammar_takes_what_docker_takes() -> None:
    for good in ("train", "team/train:v1", "localhost:5000/a/b_c:1.0-x", "my-reg.example.com/t__x:_v"):
        assert check_tag(good) == good
    assert check_tag("a" * 255 + ":v1")  # 255 counts the name, not its tag
    bad_refs = ("", "train:", ":v1", "a//b", "-a/b", "a/b:" + "v" * 129, "reg-.example:5000/a", "a/b@sha256:")
    for bad in bad_refs:
        with pytest.raises(UsageError):
            check_tag(bad)
    assert check_registry("127.0.0.1:5000/team") == "127.0.0.1:5000/team"
    with pytest.raises(UsageError):
        check_registry("127.0.0.1:5000/Team")
    # registry/ parses with the same grammar: a Unicode digit in a port is no port.
    with pytest.raises(UsageError, match="is not a registry host"):
        parse_reference("reg.example:\u0665\u0660\u0660\u0660/a:1")


@pytest.mark.parametrize("value", ["-5", "nan", "0", "inf", "-inf"])
@pytest.mark.parametrize("option", ["--timeout", "--budget-seconds"])
def test_certify_refuses_a_duration_that_is_not_a_positive_number_at_parse_time(
    option: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: accepted (nan/inf/0/-5 reached the container timer; the image lookup failed first).
    res = invoke("certify", "no-such-image:1", option, value, tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert res.exit_code == 2, res.output
    assert f"envbuilder: error: {option} {float(value)!r}: give a number of seconds above 0" in res.output
    assert "not found" not in res.output


def test_fleet_certify_refuses_the_same_durations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = invoke("fleet", "certify", "img:1", "--timeout", "nan", tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert res.exit_code == 2, res.output
    assert "envbuilder: error: --timeout nan: give a number of seconds above 0" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "relative/dir"], "-w 'relative/dir': the working directory must be an absolute path"),
        (["--shm-size", "99999999999g"], "size '99999999999g' is out of range"),
        (["--shm-size", "0"], "size '0' is out of range"),
        (["--shm-size", "\u0661\u0666g"], "malformed size"),
    ],
)
def test_run_refuses_bad_container_options_before_touching_docker(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: docker refused them after the certificate check (a relative -w), or its 500 for an
    # int64 overflow read as "start the Docker daemon" (exit 7). The unit suite's guard fails any
    # test that reaches Docker, so these are refused before.
    res = invoke("run", *args, "img:1", "true", tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert res.exit_code == 2, res.output
    assert res.output.startswith("envbuilder: error: ") and message in res.output
    assert "Docker daemon" not in res.output


def test_sizes_and_workdirs() -> None:
    assert parse_size("16g") == 16 << 30
    assert parse_size(str((1 << 63) - 1)) == (1 << 63) - 1
    with pytest.raises(UsageError):
        parse_size(str(1 << 63))
    assert parse_workdir("/workspace") == "/workspace"
    for bad in (
        "",
        "work",
        "/a\nb",
        "/a\rb",
        "/a\x00b",
        "/work\r",
    ):  # each control character docker splits on
        with pytest.raises(UsageError):
            parse_workdir(bad)


@pytest.mark.parametrize(
    "key", ["NVIDIA_DISABLE_REQUIRE", "NVIDIA_REQUIRE_DRIVER", "NVIDIA_MIG_CONFIG_DEVICES"]
)
def test_a_spec_may_not_set_nvidia_variables(key: str) -> None:
    # Before: NVIDIA_DISABLE_REQUIRE=1 was accepted and switched off the Toolkit's driver check.
    with pytest.raises(SpecError) as info:
        spec(env={key: "1"})
    assert f"field 'env.{key}'" in info.value.message
    assert "NVIDIA_* variables steer the NVIDIA Container Toolkit" in info.value.message
    assert info.value.hint and "envbuilder run -e" in info.value.hint
    assert info.value.exit_code == 10


def test_the_cli_says_so_for_a_spec_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.yaml"
    path.write_text('schema_version: 1\nname: x\nframework: "torch"\nenv: {NVIDIA_DISABLE_REQUIRE: "1"}\n')
    res = invoke("render", str(path), "--cpu", tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert res.exit_code == 10, res.output
    assert "envbuilder: error: " in res.output and "env.NVIDIA_DISABLE_REQUIRE" in res.output


@pytest.mark.parametrize(
    "fields",
    [
        {"python": "3.\u0661\u0661"},
        {"python": "3.\uff11\uff11"},
        {"source": "https://example.com:\u0668\u0660/x"},
    ],
)
def test_unicode_digits_are_no_digits_in_spec_fields(fields: dict[str, str]) -> None:
    with pytest.raises(SpecError):
        spec(**fields)


def test_a_value_the_daemon_cannot_decode_is_the_requests_fault() -> None:
    import docker.errors

    from envbuilder.engine.docker_engine import _refusal

    exc = docker.errors.APIError(
        "500 Server Error",
        explanation="json: cannot unmarshal number 1e30 into Go struct field HostConfig.ShmSize",
    )
    err = _refusal("docker create img", exc)
    assert isinstance(err, UsageError) and "cannot unmarshal" in err.message


def test_a_secret_path_with_a_comma_is_read_as_docker_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envbuilder.cli.build_cmd import parse_secret
    from envbuilder.engine import BuildSecret

    folder = tmp_path / "certs,x"
    folder.mkdir()
    real = folder / "ca.pem"
    real.write_text("pem\n")
    assert parse_secret(f'id=ca,"src={real}"') == BuildSecret(id="ca", src=real)
    # Unquoted, docker's CSV reader would split it: refused, with the quoting docker takes.
    res = invoke("build", SPEC, "--secret", f"id=ca,src={real}", tmp_path=tmp_path, monkeypatch=monkeypatch)
    assert res.exit_code == 2, res.output
    assert f"envbuilder: error: --secret 'id=ca,src={real}': expected id=NAME,src=FILE" in res.output
    assert 'hint: quote a field that holds a comma or a quote, as docker reads it: id=ca,"src=' in res.output


def test_a_bake_file_quotes_a_secret_path_with_a_comma_as_buildx_reads_it() -> None:
    from envbuilder.engine import BuildSecret
    from envbuilder.fleet.bake import bake_file
    from envbuilder.image.build import BuildOptions

    opts = BuildOptions(secrets=(BuildSecret(id="ca", src=Path("/certs,src=/etc/shadow/ca.pem")),))
    text = bake_file([("a", Path("/c"), Path("/c/Dockerfile"))], opts)
    assert 'secret = ["id=ca,\\"src=/certs,src=/etc/shadow/ca.pem\\""]' in text
