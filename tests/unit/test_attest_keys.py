"""envbuilder/attest keys and trust policy: generated keys (0600, passphrase), found, loaded;
policy files parsed with every field checked, per-repository trust, durations, `keys import`."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from envbuilder.attest.keys import (
    find_key,
    generate_key,
    list_keys,
    load_public_key,
    load_signer,
    public_key_from_pem,
)
from envbuilder.attest.policy import (
    choose_policy,
    default_policy,
    import_trusted_key,
    load_policy,
    parse_duration,
)
from envbuilder.errors import SigningKeyError


@pytest.mark.parametrize(("keytype", "scheme"), [("ecdsa", "ecdsa-sha2-nistp256"), ("ed25519", "ed25519")])
def test_generate_key_private_half_is_0600(tmp_path: Path, keytype: str, scheme: str) -> None:
    folder = tmp_path / "keys"
    info = generate_key("ci", keytype=keytype, directory=folder)
    assert info.scheme == scheme and len(info.keyid) == 64 and not info.encrypted
    assert info.private_path is not None
    assert stat.S_IMODE(info.private_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert info.public_path.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    signer = load_signer(info)
    assert signer.public_key.keyid == info.keyid
    assert not list(folder.glob(".*.tmp"))


def test_generate_never_overwrites(tmp_path: Path) -> None:
    first = generate_key("ci", directory=tmp_path)
    before = first.public_path.read_bytes()
    with pytest.raises(SigningKeyError, match="already exists") as info:
        generate_key("ci", keytype="ed25519", directory=tmp_path)
    assert info.value.exit_code == 16 and first.public_path.read_bytes() == before


def test_generate_writes_nothing_where_only_the_public_half_exists(tmp_path: Path) -> None:
    # A NAME.pub alone (a key someone else's, copied in) is a key of that name: no NAME.key is
    # written beside it (set S's S20 looked for NAME.key only, wrote it, then failed on NAME.pub)
    other = generate_key("ci", directory=tmp_path / "other")
    (tmp_path / "ci.pub").write_bytes(other.public_path.read_bytes())
    with pytest.raises(SigningKeyError, match="already exists"):
        generate_key("ci", directory=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ci.pub", "other"]


@pytest.mark.parametrize("name", ["../evil", "", "a b", "x" * 65, "ci\n"])
def test_generate_refuses_bad_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(SigningKeyError, match="is not a key name"):
        generate_key(name, directory=tmp_path)


@pytest.mark.parametrize("curve", [ec.SECP384R1(), ec.SECP521R1(), ec.SECP256K1()])
def test_an_ecdsa_key_on_another_curve_than_p256_is_refused(tmp_path: Path, curve: ec.EllipticCurve) -> None:
    pem = (
        ec.generate_private_key(curve)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(SigningKeyError, match=f"must be on P-256, not {curve.name}"):
        public_key_from_pem(pem, "other.pub")
    (tmp_path / "other.pub").write_bytes(pem)
    with pytest.raises(SigningKeyError, match="must be on P-256"):
        load_public_key(tmp_path / "other.pub")


def test_a_private_key_that_does_not_match_its_public_half_never_signs(tmp_path: Path) -> None:
    """The .pub is what others trust and what `keys list` shows: a private key beside another
    pair's .pub (a copy gone wrong) is refused, not used to sign under a key nobody trusts."""
    a = generate_key("a", directory=tmp_path / "k")
    b = generate_key("b", directory=tmp_path / "k")
    a.public_path.write_bytes(b.public_path.read_bytes())
    swapped = find_key("a", directory=tmp_path / "k")
    assert swapped.keyid == b.keyid
    with pytest.raises(SigningKeyError, match="does not match"):
        load_signer(swapped)


def test_passphrase_protected_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = generate_key("ci", passphrase=b"correct horse", directory=tmp_path)
    assert info.encrypted and info.private_path is not None
    assert b"ENCRYPTED PRIVATE KEY" in info.private_path.read_bytes()
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    with pytest.raises(SigningKeyError, match="passphrase-protected and no passphrase was given"):
        load_signer(info)
    with pytest.raises(SigningKeyError, match="wrong passphrase"):
        load_signer(info, lambda _name: b"wrong")
    monkeypatch.setenv("ENVBUILDER_KEY_PASSPHRASE", "correct horse")
    assert load_signer(info).public_key.keyid == info.keyid


def test_a_wrong_passphrase_that_decrypts_to_garbage_is_still_called_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # about one wrong passphrase in 300 passes the padding check and fails as key data instead
    # (this test's neighbour failed that way once); the error says what the user most likely did
    from cryptography.hazmat.primitives import serialization

    info = generate_key("ci", passphrase=b"correct horse", directory=tmp_path)
    garbage = (
        "Could not deserialize key data. The data may be in an incorrect format, it may be "
        "encrypted with an unsupported algorithm, ... Details: ASN.1 parsing error: invalid length"
    )

    def load(_pem: bytes, _secret: bytes | None) -> None:
        raise ValueError(garbage)

    monkeypatch.setattr(serialization, "load_pem_private_key", load)
    with pytest.raises(SigningKeyError, match=r"wrong passphrase, or a damaged key file \(Could not") as e:
        load_signer(info, lambda _name: b"wrong")
    assert e.value.hint is not None and "ENVBUILDER_KEY_PASSPHRASE" in e.value.hint
    plain = generate_key("plain", directory=tmp_path / "p")  # unencrypted: the library's words
    with pytest.raises(SigningKeyError, match="cannot unlock key 'plain': Could not deserialize"):
        load_signer(plain)


def test_find_key_rules(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="no signing key in"):
        find_key(directory=tmp_path)
    a = generate_key("a", directory=tmp_path)
    assert find_key(directory=tmp_path) == a  # the only one
    generate_key("b", directory=tmp_path)
    with pytest.raises(SigningKeyError, match="none is named 'default'"):
        find_key(directory=tmp_path)
    d = generate_key("default", directory=tmp_path)
    assert find_key(directory=tmp_path) == d
    assert find_key("b", directory=tmp_path).name == "b"
    with pytest.raises(SigningKeyError, match="no signing key named 'c'"):
        find_key("c", directory=tmp_path)
    assert [k.name for k in list_keys(tmp_path)] == ["a", "b", "default"]


def test_find_key_matches_the_whole_name_never_a_prefix(tmp_path: Path) -> None:
    """`--key prod` signs with `prod`, never with `prod-old` (listed first: '-' sorts before '.')."""
    old = generate_key("prod-old", directory=tmp_path)
    prod = generate_key("prod", directory=tmp_path)
    assert [k.name for k in list_keys(tmp_path)] == ["prod-old", "prod"]
    assert find_key("prod", directory=tmp_path) == prod
    assert find_key("prod-old", directory=tmp_path) == old
    with pytest.raises(SigningKeyError, match="no signing key named 'pro'"):
        find_key("pro", directory=tmp_path)


# --------------------------------------------------------------------------- policy


@pytest.mark.parametrize(
    ("text", "seconds"), [("45s", 45), ("90m", 5400), ("12h", 43200), ("30d", 2592000), (60, 60)]
)
def test_parse_duration(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "-1d", "0s", "3y"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(SigningKeyError):
        parse_duration(text)


def test_policy_file_keys_repositories_and_max_age(tmp_path: Path) -> None:
    ci = generate_key("ci", directory=tmp_path / "k")
    other = generate_key("other", directory=tmp_path / "k")
    policy_file = tmp_path / "trust.yaml"
    policy_file.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "max_age": "7d",
                "keys": [
                    {"name": "ci", "public_key": "k/ci.pub", "repositories": ["reg.example/team/*"]},
                    {"name": "other", "pem": other.public_path.read_text()},
                ],
            }
        )
    )
    policy = load_policy(policy_file)
    assert policy.max_age_s == 7 * 86400
    assert [k.keyid for k in policy.keys_for("reg.example/team/train")] == [ci.keyid, other.keyid]
    assert [k.keyid for k in policy.keys_for("reg.example/elsewhere/train")] == [other.keyid]
    assert choose_policy(trust=policy_file, max_age="1h").max_age_s == 3600
    # set T's T36: an empty --max-age is no duration, not "no --max-age" (the policy's 7d or none)
    with pytest.raises(SigningKeyError, match="not a duration"):
        choose_policy(trust=policy_file, max_age="")


def test_a_keys_repository_patterns_match_the_whole_name_never_a_prefix(tmp_path: Path) -> None:
    ci = generate_key("ci", directory=tmp_path / "k")
    policy_file = tmp_path / "trust.yaml"
    patterns = ["reg.example/team/app", "reg.example/*/model", "reg.example/ci/job-?"]
    keys = [{"name": "ci", "public_key": "k/ci.pub", "repositories": patterns}]
    policy_file.write_text(yaml.safe_dump({"schema_version": 1, "keys": keys}))
    key = load_policy(policy_file).keys[0]
    assert key.keyid == ci.keyid
    for covered in ("reg.example/team/app", "reg.example/team/model", "reg.example/ci/job-1"):
        assert key.covers(covered), covered
    others = ("reg.example/team/app-evil", "reg.example/team/apps", "reg.example/ci/job-12", "reg.example/x")
    for other in others:
        assert not key.covers(other), other


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "a trust policy is a mapping"),
        ({"schema_version": 2, "keys": []}, "schema_version must be 1"),
        ({"keys": []}, "schema_version must be 1"),  # a file without it is not taken as version 1
        ({"schema_version": "1", "keys": []}, "schema_version must be 1"),
        ({"schema_version": 1, "keys": [], "extra": 1}, r"unknown field\(s\) extra"),
        ({"schema_version": 1, "keys": {}}, "`keys` must be a list"),
        ({"schema_version": 1, "keys": [{"public_key": "x.pub"}]}, r"keys\[0\]: `name` is missing"),
        ({"schema_version": 1, "keys": [{"name": "a"}]}, "give exactly one of public_key"),
        (
            {"schema_version": 1, "keys": [{"name": "a", "public_key": "a.pub", "pem": "junk"}]},
            "give exactly one of public_key",
        ),
        ({"schema_version": 1, "keys": [{"name": "a", "pem": "junk"}]}, "is not a PEM public key"),
        (
            {"schema_version": 1, "keys": [{"name": "a", "public_key": "none.pub"}]},
            "cannot read the public key",
        ),
        ({"schema_version": 1, "max_age": "ever", "keys": []}, "max_age 'ever' is not a duration"),
        # a falsy max_age is a value given, refused, never read as "no limit" (set P: P32)
        ({"schema_version": 1, "max_age": 0, "keys": []}, "max_age 0 must be positive"),
        ({"schema_version": 1, "max_age": "", "keys": []}, "max_age '' is not a duration"),
    ],
)
def test_policy_errors_name_the_field(tmp_path: Path, doc: object, message: str) -> None:
    path = tmp_path / "trust.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(SigningKeyError, match=message) as info:
        load_policy(path)
    assert str(path) in info.value.message


def test_default_policy_trusts_own_keys_until_a_policy_file_exists(tmp_path: Path) -> None:
    own = generate_key("mine", directory=tmp_path / "keys")
    assert [k.keyid for k in default_policy(tmp_path).keys] == [own.keyid]
    theirs = generate_key("theirs", directory=tmp_path / "elsewhere")
    path = import_trusted_key(theirs.public_path, repositories=["reg/team/*"], base=tmp_path)
    policy = default_policy(tmp_path)
    assert policy.source == str(path)
    assert [(k.name, k.keyid) for k in policy.keys] == [("mine", own.keyid), ("theirs", theirs.keyid)]
    assert [k.name for k in policy.keys_for("reg/other/x")] == ["mine"]
    with pytest.raises(SigningKeyError, match="already trusts a key named 'theirs'"):
        import_trusted_key(theirs.public_path, base=tmp_path)


def test_a_public_key_without_its_private_half_is_not_one_of_your_own(tmp_path: Path) -> None:
    """Your own keys are the pairs in DATA/keys; a bare NAME.pub dropped there (someone else's key)
    is not one, so the default policy does not trust it for every repository (set R's R32: every
    *.pub was listed)."""
    own = generate_key("mine", directory=tmp_path / "keys")
    theirs = generate_key("theirs", directory=tmp_path / "elsewhere")
    (tmp_path / "keys" / "theirs.pub").write_bytes(theirs.public_path.read_bytes())
    assert [k.name for k in list_keys(tmp_path / "keys")] == ["mine"]
    assert [k.keyid for k in default_policy(tmp_path).keys] == [own.keyid]


@pytest.mark.parametrize("name", ["../outside", "a/b", ".hidden"])
def test_a_trusted_keys_name_is_a_plain_file_name_or_nothing_is_written(tmp_path: Path, name: str) -> None:
    # The name becomes DATA/keys/trusted/NAME.pub: `../outside` would write beside the folder.
    theirs = generate_key("theirs", directory=tmp_path / "elsewhere")
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(SigningKeyError, match="is not a key name"):
        import_trusted_key(theirs.public_path, name=name, base=tmp_path / "data")
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_choose_policy_key_and_trust_are_exclusive(tmp_path: Path) -> None:
    k = generate_key("a", directory=tmp_path)
    assert [t.keyid for t in choose_policy(keys=[k.public_path]).keys] == [k.keyid]
    with pytest.raises(SigningKeyError, match="not both"):
        choose_policy(keys=[k.public_path], trust=tmp_path / "t.yaml")


# --------------------------------------------------------------------------- set Q's survivors


@pytest.mark.parametrize("repositories", [None, "", "reg.example/team/*"])
def test_a_keys_repositories_that_are_no_list_of_patterns_are_refused_not_read_as_every_one(
    tmp_path: Path, repositories: object
) -> None:
    """Leaving `repositories` out trusts the key for every repository; writing it as null, ""
    or one pattern without the list is a mistake, refused: never read as that trust."""
    generate_key("ci", directory=tmp_path / "k")
    policy_file = tmp_path / "trust.yaml"
    keys = [{"name": "ci", "public_key": "k/ci.pub", "repositories": repositories}]
    policy_file.write_text(yaml.safe_dump({"schema_version": 1, "keys": keys}))
    with pytest.raises(SigningKeyError, match="repositories must be a list of patterns"):
        load_policy(policy_file)
