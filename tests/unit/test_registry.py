"""envbuilder/registry: references, the HTTP client against an in-process registry (tests/unit/
fake_registry.py): blobs, manifests, digests checked, referrers through the API and through the
fallback tag, Basic and bearer auth with their exit codes, retries."""

from __future__ import annotations

import json

import pytest
from fake_registry import PASSWORD, USER, fake_registry, push_image

from envbuilder.engine.credentials import Credentials
from envbuilder.errors import RegistryAuthError, RegistryError, RegistryNotFoundError, UsageError
from envbuilder.registry import OCI_INDEX, RegistryClient, fallback_tag, parse_reference
from envbuilder.registry.auth import parse_challenge
from envbuilder.registry.client import is_insecure

ART = "application/vnd.dsse.envelope.v1+json"


def anonymous(_registry: str) -> Credentials | None:
    return None


def alice(_registry: str) -> Credentials | None:
    return Credentials(username=USER, password=PASSWORD)


def mallory(_registry: str) -> Credentials | None:
    return Credentials(username=USER, password="wrong")


# --------------------------------------------------------------------------- references


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("debian", "docker.io", "library/debian", "latest", None),
        ("team/train:1", "docker.io", "team/train", "1", None),
        ("127.0.0.1:5000/envbuilder/x:abc", "127.0.0.1:5000", "envbuilder/x", "abc", None),
        ("localhost/a", "localhost", "a", "latest", None),
        ("reg.example.com/a/b@sha256:" + "a" * 64, "reg.example.com", "a/b", None, "sha256:" + "a" * 64),
        ("index.docker.io/library/debian:12", "docker.io", "library/debian", "12", None),
    ],
)
def test_parse_reference(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)


@pytest.mark.parametrize("text", ["UPPER/case", "a/b@sha256:xyz", "reg:5000/a:b:c", "a//b", ""])
def test_parse_reference_refuses_malformed(text: str) -> None:
    with pytest.raises(UsageError, match="is not an image reference"):
        parse_reference(text)


def test_fallback_tag_is_the_spec_schema() -> None:
    assert fallback_tag("sha256:" + "ab" * 32) == "sha256-" + "ab" * 32


def test_insecure_hosts() -> None:
    assert (
        is_insecure("127.0.0.1:5000", {})
        and is_insecure("localhost:5000", {})
        and is_insecure("[::1]:5000", {})
    )
    assert not is_insecure("registry.example.com", {})
    assert is_insecure("reg.lan:5000", {"ENVBUILDER_INSECURE_REGISTRIES": "reg.lan:5000, other"})


def test_parse_bearer_challenge() -> None:
    c = parse_challenge(
        'Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull,push"'
    )
    assert c is not None and c.scheme == "bearer"
    assert c.params == {
        "realm": "https://auth.example/token",
        "service": "reg",
        "scope": "repository:a/b:pull,push",
    }


# --------------------------------------------------------------------------- blobs and manifests


def test_push_and_read_back_with_digests_checked() -> None:
    with fake_registry() as (host, state):
        client = RegistryClient(host, credentials=anonymous)
        digest, image_id = push_image(client, "team/x", "1")
        manifest = client.resolve(parse_reference(f"{host}/team/x:1"))
        assert manifest.digest == digest and manifest.json()["config"]["digest"] == image_id
        assert client.get_manifest("team/x", digest).body == manifest.body
        assert client.blob_exists("team/x", image_id)
        assert client.get_blob("team/x", image_id).startswith(b"{")
        state.corrupt_blobs = True
        with pytest.raises(RegistryError, match="does not match its digest"):
            client.get_blob("team/x", image_id)


def test_missing_manifest_is_not_found_exit_15() -> None:
    with fake_registry() as (host, _state):
        client = RegistryClient(host, credentials=anonymous)
        with pytest.raises(RegistryNotFoundError, match="MANIFEST_UNKNOWN") as info:
            client.get_manifest("team/none", "1")
        assert info.value.exit_code == 15


def test_unreachable_registry_is_exit_13() -> None:
    client = RegistryClient("127.0.0.1:9", credentials=anonymous, retries=1, backoff=0)
    with pytest.raises(RegistryError, match=r"cannot reach the registry 127\.0\.0\.1:9") as info:
        client.get_manifest("a", "1")
    assert info.value.exit_code == 13


def test_retries_503_then_succeeds() -> None:
    with fake_registry() as (host, state):
        client = RegistryClient(host, credentials=anonymous, backoff=0)
        push_image(client, "team/x", "1")
        state.fail_next = 3
        before = len(state.requests)
        assert client.get_manifest("team/x", "1").digest.startswith("sha256:")
        assert len(state.requests) - before == 4  # three 503s, then the answer
        state.fail_next = 10
        with pytest.raises(RegistryError, match="HTTP 503"):
            RegistryClient(host, credentials=anonymous, retries=2, backoff=0).get_manifest("team/x", "1")


# --------------------------------------------------------------------------- auth


def test_basic_auth_with_docker_config_credentials() -> None:
    with fake_registry(auth="basic") as (host, _state):
        digest, _ = push_image(RegistryClient(host, credentials=alice), "team/x", "1")
        assert RegistryClient(host, credentials=alice).get_manifest("team/x", "1").digest == digest
        with pytest.raises(RegistryAuthError, match="Docker config has none") as none:
            RegistryClient(host, credentials=anonymous).get_manifest("team/x", "1")
        assert none.value.exit_code == 14
        with pytest.raises(RegistryAuthError, match="refused the Docker config's credentials"):
            RegistryClient(host, credentials=mallory).get_manifest("team/x", "1")


def test_bearer_token_flow_scopes_and_reuse() -> None:
    with fake_registry(auth="bearer") as (host, state):
        client = RegistryClient(host, credentials=alice)
        digest, _ = push_image(client, "team/x", "1")
        assert "repository:team/x:pull,push" in state.token_scopes
        reader = RegistryClient(host, credentials=anonymous)  # anonymous pull tokens are given
        before = len(state.token_scopes)
        assert reader.get_manifest("team/x", "1").digest == digest
        assert reader.get_manifest("team/x", digest).digest == digest
        assert state.token_scopes[before:] == ["repository:team/x:pull"]  # one token, used twice
        with pytest.raises(RegistryAuthError, match=r"token server .* refused an anonymous request"):
            push_image(reader, "team/x", "2")
        with pytest.raises(RegistryAuthError, match="refused the Docker config's credentials"):
            RegistryClient(host, credentials=mallory).get_manifest("team/x", "1")


# --------------------------------------------------------------------------- referrers


@pytest.mark.parametrize("api", [False, True], ids=["fallback-tag", "referrers-api"])
def test_attach_and_discover_referrers(api: bool) -> None:
    with fake_registry(referrers_api=api) as (host, state):
        client = RegistryClient(host, credentials=anonymous)
        digest, _ = push_image(client, "team/x", "1")
        subject = client.get_manifest("team/x", digest).descriptor
        first = client.attach("team/x", subject, artifact_type=ART, blob=b'{"a":1}', annotations={"n": "1"})
        second = client.attach("team/x", subject, artifact_type=ART, blob=b'{"a":2}', annotations={"n": "2"})
        client.attach("team/x", subject, artifact_type="application/other", blob=b"x")
        found = client.referrers("team/x", digest, artifact_type=ART)
        assert sorted(d.digest for d in found.descriptors) == sorted([first.digest, second.digest])
        assert {d.annotations["n"] for d in found.descriptors} == {"1", "2"}
        assert found.via == ("referrers API" if api else f"fallback tag {fallback_tag(digest)}")
        has_tag = ("team/x", fallback_tag(digest)) in state.manifests
        assert has_tag is (not api)  # the fallback index is kept only where the API is missing
        if not api:
            index = json.loads(state.manifests[("team/x", fallback_tag(digest))][0])
            assert index["mediaType"] == OCI_INDEX and len(index["manifests"]) == 3
        artifact = client.get_manifest("team/x", first.digest).json()
        assert artifact["subject"]["digest"] == digest and artifact["artifactType"] == ART
        assert artifact["config"]["mediaType"] == "application/vnd.oci.empty.v1+json"


def test_no_referrers_is_empty_not_an_error() -> None:
    with fake_registry() as (host, _state):
        client = RegistryClient(host, credentials=anonymous)
        digest, _ = push_image(client, "team/x", "1")
        found = client.referrers("team/x", digest)
        assert found.descriptors == () and "(none)" in found.via
