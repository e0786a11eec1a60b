"""Registry credentials as the docker CLI keeps them ($DOCKER_CONFIG/config.json: `auths`,
`credsStore`, `credHelpers`), read with the Docker SDK's own `docker.auth` so that credential
helpers work exactly as for `docker push`. Part of the engine boundary (the only docker importer);
envbuilder/registry/ asks here and never imports docker."""

from __future__ import annotations

from dataclasses import dataclass

from envbuilder.errors import RegistryAuthError


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """What the Docker config holds for one registry: a username and password, or an identity
    token (an OAuth2 refresh token, exchanged at the token endpoint)."""

    username: str | None = None
    password: str | None = None
    identity_token: str | None = None


def registry_credentials(registry: str) -> Credentials | None:
    """The Docker config's credentials for `registry` (host[:port]; `docker.io` for Docker Hub),
    or None. Raises RegistryAuthError when a credential helper fails."""
    try:
        import docker.auth
        import docker.errors
    except ImportError:  # without the SDK nobody has stored docker credentials for us to read
        return None
    try:
        config = docker.auth.load_config()
        found = config.resolve_authconfig(None if registry == docker.auth.INDEX_NAME else registry)
    except docker.errors.DockerException as exc:
        raise RegistryAuthError(
            f"the Docker credential helper for {registry} failed: {exc}",
            hint=f"check `docker login {registry}` and the helper named in the Docker config",
        ) from exc
    if not found:
        return None
    token = found.get("IdentityToken") or found.get("identitytoken")
    return Credentials(
        username=found.get("Username") or found.get("username"),
        password=found.get("Password") or found.get("password"),
        identity_token=token or None,
    )
