"""How a failed tool's output reaches the user (issue 26 item 3): the one-line error, then the
last 40 lines of uv's or BuildKit's log each on its own line (they arrived as one line with
literal `\\n`), then the hint, chosen from that output: --ca-bundle behind a TLS-intercepting
proxy, --wheelhouse for wheels a lock took from a local folder."""

from __future__ import annotations

import stat
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner
from fake_engine import FakeEngine, cpu_package_lock, make_resolution, make_spec
from render_cases import locked, package_lock

from envbuilder.cli import cli
from envbuilder.engine import BuildSecret
from envbuilder.errors import LOG_TAIL_LINES, BuildFailedError, LockError, log_tail
from envbuilder.image.build import BuildOptions, failure_hint
from envbuilder.image.hints import local_only, missing_wheelhouse_hint, tls_hint
from envbuilder.image.packages import LockSettings, uv_version
from envbuilder.matrix import load_matrix
from envbuilder.pipeline.up import Fallbacks, build_for_up

PIP_TLS = (
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'SSLError(SSLCertVerificationError(1, "
    "'[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate "
    "chain (_ssl.c:1006)'))': /simple/packaging/"
)
UV_TLS = "  Caused by: invalid peer certificate: UnknownIssuer"


def failing_command(exc: Exception) -> click.Group:
    """A group of envbuilder's own kind (its error printer) with one command raising `exc`."""

    @click.group(cls=type(cli))
    def group() -> None:
        pass

    @group.command()
    def boom() -> None:
        raise exc

    return group


def test_a_tool_log_keeps_its_lines_and_shows_the_last_40_then_the_hint() -> None:
    log = [f"#9 12.{n} step output line {n}" for n in range(60)] + ["#9 ERROR: exit code: 1\x1b[2J"]
    exc = BuildFailedError(
        "docker build failed (exit 1) at step 5/9: RUN uv pip install", hint="fix it", log=log_tail(log)
    )
    res = CliRunner().invoke(failing_command(exc), ["boom"])
    assert res.exit_code == 9
    lines = res.output.splitlines()
    assert lines[0] == "envbuilder: error: docker build failed (exit 1) at step 5/9: RUN uv pip install"
    assert lines[1] == f"  --- last {LOG_TAIL_LINES} log lines ---"
    assert lines[2] == "  #9 12.21 step output line 21" and lines[-2] == "  #9 ERROR: exit code: 1\\x1b[2J"
    assert len(lines) == 2 + LOG_TAIL_LINES + 1 and lines[-1] == "hint: fix it"
    assert "\\n" not in res.output and "\x1b" not in res.output


def test_a_message_without_a_log_is_still_one_line() -> None:
    res = CliRunner().invoke(failing_command(LockError("bad\nforged line", hint="h")), ["boom"])
    assert res.output.splitlines() == ["envbuilder: error: bad\\nforged line", "hint: h"]


def test_log_tail_splits_chunks_and_drops_blank_lines() -> None:
    assert log_tail(["a\n\nb\r\n", "  \n", "c"], 2) == ("b", "c")
    assert log_tail(["x"], 0) == ()


def fake_uv(tmp_path: Path, output: str) -> str:
    script = tmp_path / "uv"
    script.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{output}\nEOF\nexit 2\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_a_failed_uv_keeps_its_lines_redacted_and_names_the_ca_bundle_behind_a_proxy(tmp_path: Path) -> None:
    output = "\n".join(
        [f"line {n}" for n in range(50)]
        + ["error: Request failed for https://user:s3cret@pkgs.example/simple/six/", UV_TLS]
    )
    with pytest.raises(LockError) as err:
        uv_version(fake_uv(tmp_path, output))
    assert err.value.message == "uv --version failed"
    assert len(err.value.log) == LOG_TAIL_LINES and err.value.log[-1] == UV_TLS
    assert "error: Request failed for https://pkgs.example/simple/six/" in err.value.log
    assert "s3cret" not in "".join(err.value.log)
    assert err.value.hint is not None and "--ca-bundle FILE" in err.value.hint


@pytest.mark.parametrize(
    "output",
    [PIP_TLS, UV_TLS, "curl: (60) SSL certificate problem: unable to get local issuer certificate"],
)
def test_tls_interception_names_the_ca_bundle(output: str) -> None:
    hint = tls_hint(f"#9 1.2 Collecting six\n{output}\n#9 ERROR: exit code: 1")
    assert hint is not None and "TLS-intercepting proxy" in hint and "--ca-bundle FILE" in hint
    given = tls_hint(output, ca_given=True)
    assert given is not None and "the --ca-bundle given does not hold" in given


def test_other_failures_get_no_tls_hint() -> None:
    assert tls_hint("ERROR: No matching distribution found for six==9.9\nexit code: 1") is None


def local_lock() -> object:
    torch = locked("torch", "2.13.0+cpu")
    local = type(torch)(
        **{**torch.to_dict(), "urls": ("file:///srv/wheels/torch-2.13.0%2Bcpu-py3-none-any.whl",)}
    )
    return package_lock(framework=(local, locked("filelock", "4.3.1", digit="b")))


def test_a_lock_from_find_links_built_without_a_wheelhouse_says_so_with_the_fix() -> None:
    lock = local_lock()
    assert [p.name for p in local_only(lock)] == ["torch"]  # type: ignore[arg-type]
    log = ["#8 0.9 error: Distribution not found: torch==2.13.0+cpu", "#8 ERROR: exit code: 1"]
    hint = missing_wheelhouse_hint(lock, log)  # type: ignore[arg-type]
    assert hint is not None
    assert "torch-2.13.0+cpu-py3-none-any.whl from the local folder /srv/wheels (--find-links)" in hint
    assert "--wheelhouse /srv/wheels" in hint and "envbuilder wheelhouse LOCK DIR" in hint
    assert missing_wheelhouse_hint(lock, ["E: Unable to locate package libfoo"]) is None  # type: ignore[arg-type]
    assert missing_wheelhouse_hint(package_lock(), log) is None  # every wheel from an index


def test_a_local_wheel_url_that_does_not_parse_gives_no_hint_and_no_crash() -> None:
    # The lock takes any printable URL; urlparse refuses a '[' it reads as an IPv6 host.
    torch = locked("torch", "2.13.0+cpu")
    odd = type(torch)(
        **{**torch.to_dict(), "urls": ("file://[srv/wheels/torch-2.13.0%2Bcpu-py3-none-any.whl",)}
    )
    lock = package_lock(framework=(odd,))
    log = ["#8 0.9 error: Distribution not found: torch==2.13.0+cpu", "#8 ERROR: exit code: 1"]
    assert missing_wheelhouse_hint(lock, log) is None


def test_the_build_picks_the_hint_from_its_log_and_options() -> None:
    lock = local_lock()
    failed = BuildFailedError("docker build failed (exit 1)", log=["error: torch==2.13.0+cpu not found"])
    hint = failure_hint(failed, lock, BuildOptions())  # type: ignore[arg-type]
    assert hint is not None and "--wheelhouse /srv/wheels" in hint
    assert failure_hint(failed, lock, BuildOptions(wheelhouse=Path("/w"))) is None  # type: ignore[arg-type]
    tls = BuildFailedError("docker build failed (exit 1)", log=[PIP_TLS])
    assert "--ca-bundle FILE" in (failure_hint(tls, None, BuildOptions()) or "")
    with_ca = BuildOptions(secrets=(BuildSecret(id="ca", src=Path("/ca.pem")),))
    assert "does not hold" in (failure_hint(tls, None, with_ca) or "")


def test_lock_takes_the_ca_bundle_its_hint_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []

    def fake_lock(spec: object, stack: object, *, settings: object = None, **_: object) -> object:
        seen.append(settings)
        return cpu_package_lock()

    monkeypatch.setattr("envbuilder.cli.lock_cmd.lock_packages", fake_lock)
    spec = tmp_path / "train.yaml"
    spec.write_text('schema_version: 1\nname: train\nframework: "torch==2.13.0"\npython: "3.11"\n')
    ca = tmp_path / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    res = CliRunner().invoke(cli, ["lock", str(spec), "--cpu", "--ca-bundle", str(ca)])
    assert res.exit_code == 0, res.output
    (settings,) = seen
    assert isinstance(settings, LockSettings) and settings.ca_bundle == ca


def test_up_takes_the_ca_bundle_for_the_lock_and_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[BuildOptions] = []

    def fake_run_build(plan: object, options: BuildOptions, engine: object, **_: object) -> object:
        seen.append(options)
        image = SimpleNamespace(id="sha256:" + "a" * 64, size=1)
        return SimpleNamespace(warnings=(), image=image, tags=("envbuilder/smoke:x",))

    monkeypatch.setattr("envbuilder.image.build.run_build", fake_run_build)
    spec = make_spec()
    ca = tmp_path / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    build_for_up(
        spec, tmp_path / "smoke.yaml", load_matrix(), make_resolution(spec), FakeEngine(), Fallbacks(),
        tmp_path / "out", False, ca,
    )  # fmt: skip
    (options,) = seen
    assert options.lock_settings is not None and options.lock_settings.ca_bundle == ca
    assert [(s.id, s.src) for s in options.secrets] == [("ca", ca)]
    assert options.outputs == (tmp_path / "out",)  # its certificate and report never enter a context


def test_a_step_of_another_platform_that_cannot_run_points_to_qemu() -> None:
    """BuildKit's runc on a host without a binfmt handler for the image's CPU."""
    failed = BuildFailedError(
        "docker build failed (exit 1)",
        log=["#5 0.104 exec /bin/sh: exec format error", "#5 ERROR: exit code: 1"],
    )
    hint = failure_hint(failed, None, BuildOptions(platform="aarch64"))
    assert hint is not None and hint.startswith(
        "the image is for linux/arm64 and this Docker host cannot run"
    )
    assert "qemu-user-static" in hint and "update-binfmts --enable qemu-aarch64" in hint
    plain = BuildFailedError("docker build failed (exit 1)", log=["#5 ERROR: exit code: 2"])
    assert failure_hint(plain, None, BuildOptions(platform="aarch64")) is None
