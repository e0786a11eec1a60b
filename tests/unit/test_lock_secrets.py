"""A mirror given as a secret never reaches a lock file or a message (issue 23 item 5, hostile-
inputs D15), `redact` takes every credential and query value out of a URL (item 14), and uv runs
with its cache and TMPDIR inside envbuilder's own temp folder (item 11, D8). uv here is a shell
script (LockSettings.uv) that records how it was started and answers as the test needs."""

from __future__ import annotations

import dataclasses
import json
import stat
import tempfile
from pathlib import Path

import pytest
from fake_engine import cpu_stack, make_spec

from envbuilder.engine import BuildSecret
from envbuilder.errors import BuildFailedError, LockError, UsageError
from envbuilder.image.build import secret_values, secrets_redacted
from envbuilder.image.packages import LockSettings, lock_packages
from envbuilder.image.render import RenderOptions, render_dockerfile
from envbuilder.image.secrets import recorded_url, redact

TOKEN = "SECRETMARKER_TOKEN_1234"
PATH_TOKEN = "SECRETMARKER_PATH_5678"
# The form of a Cloudsmith entitlement URL: the token in the path, and one in the userinfo.
MIRROR = f"http://rtuser:{TOKEN}@127.0.0.1:5009/{PATH_TOKEN}/simple"
SECRETS = (("pip_index_url", MIRROR),)
FRAMEWORK = "https://download.pytorch.org/whl/cpu"
WHEEL = "filelock-3.20.0-py3-none-any.whl"


def _no_secret(text: str) -> None:
    assert TOKEN not in text and PATH_TOKEN not in text and "rtuser" not in text, text


# ------------------------------------------------------------------------------------- redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("failed https://user:tok@h/simple/x", "failed https://h/simple/x"),
        ("at http://a:b@127.0.0.1/", "at http://127.0.0.1/"),
        # a raw `@` in the password: all of the userinfo goes, not only up to its first `@`
        ("see https://user:pa@ss@host/simple", "see https://host/simple"),
        ("see https://u:p@a@ss@host:8443/x y", "see https://host:8443/x y"),
        ("get https://h/simple?token=abc123&x=1", "get https://h/simple?token=***&x=***"),
        ("get https://h/s/?access_token=abc#frag end", "get https://h/s/?access_token=***#frag end"),
        ("s3 https://b.s3/k.whl?X-Amz-Signature=deadbeef", "s3 https://b.s3/k.whl?X-Amz-Signature=***"),
        ("mail a@b.c and https://h/p/a@b", "mail a@b.c and https://h/p/a@b"),  # `@` in a path stays
        # a file:// URL (a find-links or a wheel a tool names) loses its credentials too (set Q's Q20)
        ("no file://user:tok@nas/wheels/x.whl", "no file://nas/wheels/x.whl"),
        ("get file://nas/w?sig=abc", "get file://nas/w?sig=***"),
        # a query value is masked whole, whatever it holds (set R's R12: only up to a `-`)
        ("get https://h/s?token=ab-cd_ef.gh%2Fij~k", "get https://h/s?token=***"),
        ("get https://h/s?a=x.y&sig=p+q/r", "get https://h/s?a=***&sig=***"),
    ],
)
def test_redact_takes_credentials_and_query_values_out_of_urls(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "printed",
    [
        MIRROR,
        f"Failed to fetch: http://127.0.0.1:5009/{PATH_TOKEN}/simple/filelock/",  # uv, credentials dropped
        f"Looking in indexes: http://rtuser:****@127.0.0.1:5009/{PATH_TOKEN}/simple",  # pip, masked
        f"127.0.0.1:5009/{PATH_TOKEN}/simple/filelock/ (status 401) token {TOKEN}",
    ],
)
def test_a_secret_url_is_redacted_in_every_form_a_tool_prints_it(printed: str) -> None:
    out = redact(printed, SECRETS)
    _no_secret(out)
    assert "<secret:pip_index_url>" in out


def test_a_secret_with_a_query_token_and_a_plain_token() -> None:
    url = "https://dl.example.io/basic/repo/python/simple?token=QUERYSECRET99"
    out = redact(f"fetch {url}/numpy/ and {url}", (("pip_index_url", url),))
    assert "QUERYSECRET99" not in out and out.count("<secret:pip_index_url>") == 2
    plain = redact("auth failed for tok-abcdef1", (("corp", "tok-abcdef1"),))
    assert plain == "auth failed for <secret:corp>"


def test_recorded_url_names_the_secret_never_its_value() -> None:
    assert recorded_url(MIRROR, SECRETS) == "<secret:pip_index_url>"
    assert recorded_url(f"{MIRROR}\n", SECRETS) == "<secret:pip_index_url>"
    assert recorded_url("https://u:p@m.example/simple", ()) == "https://m.example/simple"
    assert recorded_url(None, SECRETS) is None
    # Set O's survivor O26: the mirror's URL without its credentials (another form of the secret,
    # its token in the path) is the secret too, never recorded as written.
    bare = recorded_url(f"http://127.0.0.1:5009/{PATH_TOKEN}/simple", SECRETS)
    assert bare == "<secret:pip_index_url>"
    _no_secret(bare)


# ---------------------------------------------------------------------------------- fake uv

FAKE_UV = """#!/bin/sh
# Records its argv and TMPDIR; `pip compile` writes a pylock (or fails, FAIL=1) with the mirror.
echo "$@" >> "{log}"
echo "TMPDIR=$TMPDIR" >> "{log}"
if [ "$1" = "--version" ]; then echo "uv 0.13.9"; exit 0; fi
if [ -n "$FAKE_UV_FAIL" ]; then
  echo "error: Failed to fetch: {url}/filelock/" >&2
  echo "  Caused by: HTTP status client error (401 Unauthorized) for url ({url}/filelock/)" >&2
  echo "  Caused by: token {token} rejected" >&2
  exit 2
fi
out=""
while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done
cat > "$out" <<EOF
lock-version = "1.0"
[[packages]]
name = "filelock"
version = "3.20.0"
[[packages.wheels]]
url = "{url}/filelock/{wheel}"
hashes = {{ sha256 = "{sha}" }}
EOF
"""


@pytest.fixture
def fake_uv(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "uv.log"
    uv = tmp_path / "uv"
    uv.write_text(FAKE_UV.format(log=log, url=MIRROR, token=TOKEN, wheel=WHEEL, sha="a" * 64))
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    return uv, log


def _private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp folder, for this test: tmp_path/tmp (what TMPDIR=... gives a new process)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _settings(uv: Path) -> LockSettings:
    return LockSettings(uv=str(uv), default_index=MIRROR, framework_index=MIRROR, secrets=SECRETS)


def test_a_mirror_given_as_a_secret_is_recorded_as_its_name(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _private_tmp(tmp_path, monkeypatch)
    locked = lock_packages(make_spec(), cpu_stack(), settings=_settings(fake_uv[0]))
    assert locked.default_index == locked.framework_index == "<secret:pip_index_url>"
    (pkg,) = locked.packages
    assert pkg.urls == (f"<secret:pip_index_url>/filelock/{WHEEL}",)
    _no_secret(json.dumps(locked.to_dict()))
    assert locked.resolver == "uv 0.13.9"  # the uv that locked it, as `uv --version` says
    # The build reads the mirror from its secret again; without it, render says so.
    options = RenderOptions(package_locks=(locked,), index_secret=True)
    text = render_dockerfile(make_spec(), cpu_stack(), options)
    assert '--default-index "$(cat /run/secrets/pip_index_url)"' in text and "<secret:" not in text
    _no_secret(text)
    with pytest.raises(UsageError, match="given as a secret") as err:
        render_dockerfile(make_spec(), cpu_stack(), RenderOptions(package_locks=(locked,)))
    assert err.value.exit_code == 2 and "--pip-index-url-file" in (err.value.hint or "")


def _said(exc: LockError | BuildFailedError) -> str:
    """All an error prints: its line, its hint and the tool's lines kept below it."""
    return "\n".join([exc.message, exc.hint or "", *exc.log])


def test_uv_errors_are_redacted_where_they_are_raised(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    _private_tmp(tmp_path, monkeypatch)
    with pytest.raises(LockError) as err:
        lock_packages(make_spec(), cpu_stack(), settings=_settings(fake_uv[0]))
    _no_secret(_said(err.value))
    assert "<secret:pip_index_url>/filelock/" in _said(err.value) and "401" in _said(err.value)


def test_uv_errors_lose_credentials_without_named_secrets_too(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror given with --index-url (not a secret) and credentials in the URL (the planted
    bug of item 14: uv's error output not redacted where it is raised)."""
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    _private_tmp(tmp_path, monkeypatch)
    settings = LockSettings(uv=str(fake_uv[0]))
    with pytest.raises(LockError) as err:
        lock_packages(make_spec(), cpu_stack(), settings=settings)
    assert TOKEN not in _said(err.value).replace(f"token {TOKEN}", "")  # the userinfo is gone
    assert f"rtuser:{TOKEN}@" not in _said(err.value) and "http://127.0.0.1:5009/" in _said(err.value)


def test_a_spec_index_password_from_the_environment_is_redacted_from_uv_errors(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    monkeypatch.setenv("UV_INDEX_CORP_PASSWORD", TOKEN)
    _private_tmp(tmp_path, monkeypatch)
    corp = {"name": "corp", "url": "https://pkgs.example/simple", "secret": "tok"}
    spec = make_spec(requirements=["six"], indexes=[corp])
    with pytest.raises(LockError) as err:
        lock_packages(spec, cpu_stack(), settings=LockSettings(uv=str(fake_uv[0])))
    assert TOKEN not in _said(err.value) and "token <secret:tok> rejected" in _said(err.value)


def test_uv_caches_and_temp_files_stay_in_envbuilders_own_temp_folder(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D8: no --no-cache (uv puts that cache in TMPDIR and leaves it when stopped): --cache-dir
    and TMPDIR inside the lock's envbuilder-lock-* folder, which goes with the lock."""
    tmp = _private_tmp(tmp_path, monkeypatch)
    uv, log = fake_uv
    lock_packages(make_spec(requirements=["six"]), cpu_stack(), settings=_settings(uv))
    calls = [line for line in log.read_text().splitlines() if line.startswith("pip compile")]
    tmpdirs = [line for line in log.read_text().splitlines() if line.startswith("TMPDIR=")]
    assert len(calls) == 2  # framework, project
    for call in calls:
        assert "--no-cache" not in call.split()
        cache = call.split("--cache-dir ")[1].split()[0]
        assert Path(cache).parent.name.startswith("envbuilder-lock-") and Path(cache).parent.parent == tmp
    for line in tmpdirs[1:]:  # every run but `uv --version`
        assert Path(line.removeprefix("TMPDIR=")).parent.name.startswith("envbuilder-lock-")
    assert list(tmp.iterdir()) == []  # the folder went with the lock


def test_uv_locks_wheels_only_and_the_spec_indexes_come_first_for_the_project(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both compiles take wheels only (`--only-binary :all:`: no source distribution is built, so
    no package's build script runs at lock time: set R's R28), and the project group asks the
    spec's own indexes before the framework's, in the spec's order (uv's unsafe-first-match takes
    the first index that has a name: R27 put the framework index first)."""
    _private_tmp(tmp_path, monkeypatch)
    uv, log = fake_uv
    a = {"name": "corp", "url": "https://pkgs.example/simple"}
    b = {"name": "mirror", "url": "https://mirror.example/simple"}
    spec = make_spec(requirements=["six"], indexes=[a, b])
    lock_packages(spec, cpu_stack(), settings=LockSettings(uv=str(uv), framework_index=FRAMEWORK))
    calls = [line.split() for line in log.read_text().splitlines() if line.startswith("pip compile")]
    assert len(calls) == 2  # framework, project
    for call in calls:
        at = call.index("--only-binary")
        assert call[at + 1] == ":all:"
    project = calls[1]
    named = [project[i + 1] for i, word in enumerate(project) if word == "--index"]
    assert named == [f"corp={a['url']}", f"mirror={b['url']}", f"framework={FRAMEWORK}"]
    assert project[project.index("--index-strategy") + 1] == "unsafe-first-match"


def test_a_failed_builds_message_loses_every_secret_value(tmp_path: Path) -> None:
    url_file = tmp_path / "url.txt"
    url_file.write_text(MIRROR + "\n")
    token_file = tmp_path / "token"
    token_file.write_text("corp-token-77\n")
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    secrets = [
        BuildSecret(id="pip_index_url", src=url_file),
        BuildSecret(id="corp", src=token_file),
        BuildSecret(id="ca", src=ca),
    ]
    assert secret_values(secrets) == (("pip_index_url", MIRROR), ("corp", "corp-token-77"))
    tail = f"#9 0.8 error: Failed to fetch: http://127.0.0.1:5009/{PATH_TOKEN}/simple/filelock/\n"
    tail += "#9 auth corp-token-77"
    with pytest.raises(BuildFailedError) as err, secrets_redacted(secrets):
        raise BuildFailedError(
            f"docker build failed (exit 1)\n{tail}", hint=f"retry {MIRROR}", log=tuple(tail.splitlines())
        )
    _no_secret(_said(err.value) + str(err.value))
    assert "corp-token-77" not in _said(err.value) and "<secret:corp>" in err.value.message
    assert "Failed to fetch: <secret:pip_index_url>/filelock/" in err.value.message
    # the log's lines too, each by its secret's name (not only their credentials and query values)
    assert err.value.log == (
        "#9 0.8 error: Failed to fetch: <secret:pip_index_url>/filelock/",
        "#9 auth <secret:corp>",
    )


def test_the_python_checks_uv_answer_loses_every_secret_value(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wheel check (python_pick.ask_uv, the installability step's uv) with the mirror given
    as a secret: uv's reason keeps the secret's name, never its path token."""
    from envbuilder.image.python_pick import ask_uv

    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    _private_tmp(tmp_path, monkeypatch)
    got = ask_uv(["filelock"], "3.12", "x86_64-manylinux_2_28", _settings(fake_uv[0]))
    assert not got.ok
    _no_secret(got.why)
    assert "<secret:pip_index_url>/filelock/" in got.why


def test_the_build_options_record_the_mirror_file_as_a_secret(tmp_path: Path) -> None:
    from envbuilder.cli.build_cmd import _lock_settings

    url_file = tmp_path / "url.txt"
    url_file.write_text(MIRROR + "\n")
    settings = _lock_settings(None, None, url_file)
    assert settings is not None and settings.secrets == (("pip_index_url", MIRROR),)


# ------------------------------------------------------------------- I3: --secret's CSV record


@pytest.mark.parametrize("name", ["a\nb", "a\rb", "ca.pem\n", "a\x1bb"])
def test_a_secret_path_with_a_line_break_is_refused(tmp_path: Path, name: str) -> None:
    """docker reads --secret as one CSV record: a line break ends it, whatever the quoting
    (hostile-inputs I3), so docker would read another file than the one checked."""
    from envbuilder.engine.buildkit import secret_flag

    src = tmp_path / name
    src.write_text("token\n")
    with pytest.raises(UsageError, match="line break") as err:
        secret_flag(BuildSecret(id="ca", src=src))
    assert err.value.exit_code == 2 and "\n" not in err.value.message and err.value.hint
    assert secret_flag(BuildSecret(id="ca", src=tmp_path / "a,b.pem")) == f'id=ca,"src={tmp_path}/a,b.pem"'


def test_the_build_command_refuses_a_secret_path_with_a_line_break_before_any_work(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from envbuilder.cli import cli

    src = tmp_path / "url\nRUN x.txt"
    src.write_text(MIRROR)
    spec = tmp_path / "s.yaml"
    spec.write_text('schema_version: 1\nname: s\nframework: "torch==2.13.0"\npython: "3.11"\n')
    res = CliRunner().invoke(cli, ["build", str(spec), "--cpu", "--pip-index-url-file", str(src)])
    assert res.exit_code == 2, res.output
    assert "line break" in res.output and "Traceback" not in res.output


def test_the_wheelhouse_says_a_secret_mirrors_url_is_not_recorded(tmp_path: Path) -> None:
    from dataclasses import replace

    from fake_engine import cpu_package_lock

    from envbuilder.image.wheelhouse import fill_wheelhouse

    lock = cpu_package_lock()
    pkg = replace(lock.packages[0], urls=(f"<secret:pip_index_url>/filelock/{lock.packages[0].wheel}",))
    with pytest.raises(LockError, match="a mirror given as a secret") as err:
        fill_wheelhouse(replace(lock, packages=(pkg,)), tmp_path / "wh", environ={})
    assert "--find-links" in (err.value.hint or "")


@pytest.mark.parametrize("value", ["tok9", "abcd123", "s3cr3tX"])
def test_a_short_secret_from_four_characters_is_redacted(value: str) -> None:
    """Set G's survivor G46 (h13): the shortest redacted value is 4 characters, not more."""
    assert redact(f"auth failed for {value}.", (("corp", value),)) == "auth failed for <secret:corp>."
    assert redact("auth failed for abc.", (("corp", "abc"),)) == "auth failed for abc."  # below: words


# ------------------------------------------------------------------ set H's survivors (h13)


def test_a_percent_encoded_password_is_redacted_in_its_decoded_form_too() -> None:
    secret = (("idx", "https://u:pa%40ss%3Aword9@h.example/simple"),)
    out = redact("401 for user u with password pa@ss:word9 and pa%40ss%3Aword9", secret)
    assert "pa@ss:word9" not in out and "pa%40ss%3Aword9" not in out and out.count("<secret:idx>") == 2


def test_a_secret_url_given_with_a_trailing_slash_is_redacted_where_printed_without() -> None:
    secret = (("idx", "https://h.example/tok-abc123/simple/"),)
    out = redact("cannot reach https://h.example/tok-abc123/simple: timed out", secret)
    assert "tok-abc123" not in out and out == "cannot reach <secret:idx>: timed out"
    assert redact("fetch https://h.example/tok-abc123/simple/numpy/", secret) == "fetch <secret:idx>/numpy/"


def test_query_values_after_a_semicolon_are_masked_too() -> None:
    assert redact("get https://h/s?a=1;token=SEMISECRET7") == "get https://h/s?a=***;token=***"
    assert redact("get https://h/s?a=1&b=2") == "get https://h/s?a=***&b=***"


# ------------------------------------------------------------------ fourth operator set (--ops fourth)


@pytest.mark.parametrize("given", ["\thunter22\n", "  hunter22", "\nhunter22\n"])
def test_a_secret_given_with_surrounding_white_space_is_redacted_as_its_value(given: str) -> None:
    """A secret read from a file or the environment may carry a line break or spaces around
    it; the tool prints the value without them, and that is taken out."""
    out = redact("401: password=hunter22 refused", (("corp", given),))
    assert out == "401: password=<secret:corp> refused"


@pytest.mark.parametrize("value", ["//ab@cd", "//[pass1"])
def test_a_secret_without_a_scheme_is_redacted_as_itself_not_read_as_a_url(value: str) -> None:
    """Only `scheme://...` is a URL: a password that begins with `//` is one word, taken out
    whole; it names no host whose name would be taken out of ordinary words (`cd`), and no
    character of it (`[`) makes the redaction fail."""
    out = redact(f"cd /srv: password {value} refused", (("pw", value),))
    assert out == "cd /srv: password <secret:pw> refused"


def test_a_mirror_given_as_a_secret_with_surrounding_white_space_is_recorded_as_its_name() -> None:
    """The lock records `<secret:NAME>` and nothing else (a lock value must read back) for a
    mirror whose secret value came with a line break around it, a trailing `/` included."""
    url = f"https://h.example/{PATH_TOKEN}/simple/"
    assert recorded_url(url, (("pip_index_url", f"\n{url}\n"),)) == "<secret:pip_index_url>"


def test_a_mirror_url_that_does_not_parse_is_still_redacted_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token pasted into a mirror's URL unencoded, with a `[` in it, makes the URL one that
    Python's urlsplit refuses (an unclosed IPv6 host): the mirror file is still a secret,
    taken out of uv's error whole, and the lock fails with its one-line error."""
    mirror = f"http://rtuser:{TOKEN}[x@127.0.0.1:5009/{PATH_TOKEN}/simple"
    uv = tmp_path / "uv"
    uv.write_text(
        FAKE_UV.format(log=tmp_path / "uv.log", url=mirror, token=f"{TOKEN}[x", wheel=WHEEL, sha="a" * 64)
    )
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    _private_tmp(tmp_path, monkeypatch)
    settings = LockSettings(
        uv=str(uv), default_index=mirror, framework_index=mirror, secrets=(("pip_index_url", mirror),)
    )
    with pytest.raises(LockError) as err:
        lock_packages(make_spec(), cpu_stack(), settings=settings)
    _no_secret(_said(err.value))
    assert "<secret:pip_index_url>/filelock/" in _said(err.value)
    assert (
        redact(f"GET {mirror}/filelock/", (("pip_index_url", mirror),))
        == "GET <secret:pip_index_url>/filelock/"
    )


@pytest.mark.parametrize(
    "value",
    [
        f"https://u:{TOKEN}[x@h.example/{PATH_TOKEN}/simple",  # a `[` in the password
        f"https://h[x.example/{PATH_TOKEN}/simple",  # in the host
        f"https://u:{TOKEN}]@h.example/{PATH_TOKEN}/simple",  # a `]` alone
        f"https://h\uff03x.example/{PATH_TOKEN}/simple",  # a character NFKC makes a `#`
        f"https://u:{TOKEN}@h[x.example/{PATH_TOKEN}/simple",  # a password, and a `[` in the host
        f"https://u:{TOKEN}[x@h.example/{PATH_TOKEN}/simple/",  # given with a trailing slash
        f"https://h.example/{PATH_TOKEN}\t2/simple",  # a tab inside, which urlsplit drops
    ],
)
def test_a_secret_url_that_urlsplit_refuses_or_rewrites_is_redacted_whole(value: str) -> None:
    """As a URL urlsplit reads: the whole URL is the secret's name, and what the tool adds after
    the path (`/filelock/`) stays."""
    out = redact(f"GET {value.rstrip('/')}/filelock/ failed", (("idx", value),))
    assert out == "GET <secret:idx>/filelock/ failed"


@pytest.mark.parametrize(
    "printed",
    [
        "GET http://u:****@dl.example.io/simple?token=abcd1234/six/",  # pip: the password masked
        "GET dl.example.io/simple?token=abcd1234/six/",  # without its scheme
    ],
)
def test_a_secret_url_with_a_query_is_redacted_whole_in_the_forms_a_tool_prints(printed: str) -> None:
    """The URL's `?` and `.` are its own characters, not a pattern's: the forms without the
    value's scheme or password are taken out whole, the query's token with them."""
    secret = (("idx", "https://u:pw12345@dl.example.io/simple?token=abcd1234"),)
    assert redact(printed, secret) == "GET <secret:idx>/six/"


def test_a_failed_builds_missing_hint_stays_missing_once_its_secrets_are_redacted(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("corp-token-77\n")
    with pytest.raises(BuildFailedError) as err, secrets_redacted([BuildSecret(id="corp", src=token_file)]):
        raise BuildFailedError("docker build failed (exit 1)")
    assert err.value.hint is None


def test_a_redacted_hint_keeps_what_it_says_around_the_secret(tmp_path: Path) -> None:
    """The hint is redacted, not dropped: what to do is still said, the secret's value is not."""
    url_file = tmp_path / "url"
    url_file.write_text(MIRROR + "\n")
    with (
        pytest.raises(BuildFailedError) as err,
        secrets_redacted([BuildSecret(id="pip_index_url", src=url_file)]),
    ):
        raise BuildFailedError("docker build failed (exit 1)", hint=f"check that {MIRROR} answers")
    assert err.value.hint == "check that <secret:pip_index_url> answers"


def test_an_empty_hint_is_kept_as_given() -> None:
    with pytest.raises(BuildFailedError) as err, secrets_redacted([]):
        raise BuildFailedError("docker build failed (exit 1)", hint="")
    assert err.value.hint == ""


# --------------------------------------------------------------------------- set Q's survivors


def test_a_mirror_given_as_a_secret_after_another_index_is_asked_for_too(
    fake_uv: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default index's mirror was a secret, the framework index a plain URL: the secret comes
    second in a group's indexes, and render still says the build needs it (not a refused URL)."""
    _private_tmp(tmp_path, monkeypatch)
    spec = make_spec(requirements=["filelock"])
    locked = lock_packages(make_spec(), cpu_stack(), settings=_settings(fake_uv[0]))
    (pkg,) = locked.packages  # the project's group: the same wheel, for the test's sake
    plain_first = dataclasses.replace(
        locked,
        framework_index="https://download.pytorch.org/whl/cpu",
        packages=(pkg, dataclasses.replace(pkg, group="project")),
    )
    assert [url for _, url in plain_first.index_urls("project")][1] == "<secret:pip_index_url>"
    with pytest.raises(UsageError, match="given as a secret") as err:
        render_dockerfile(spec, cpu_stack(), RenderOptions(package_locks=(plain_first,)))
    assert err.value.exit_code == 2 and "--pip-index-url-file" in (err.value.hint or "")
