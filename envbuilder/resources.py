"""Where envbuilder's folders are: the data it ships (matrices/, templates/, images/, the harness), in a
checkout or a wheel, the user's data folder (the certificate store, run logs, telemetry) and the
user's cache folder (what can be rebuilt at any time)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from envbuilder.errors import UsageError

_PACKAGE_DIR = Path(__file__).resolve().parent


def shipped_dir(name: str) -> Path:
    """The folder `name` (matrices, templates or images): the checkout's top-level folder when
    running from a source tree or editable install, else the copy packed into the wheel."""
    in_checkout = _PACKAGE_DIR.parent / name
    if in_checkout.is_dir():
        return in_checkout
    return _PACKAGE_DIR / "_data" / name


def matrices_dir() -> Path:
    return shipped_dir("matrices")


def templates_dir() -> Path:
    return shipped_dir("templates")


def images_dir() -> Path:
    return shipped_dir("images")


def harness_dir() -> Path:
    """The self-contained certification payload that is copied into every image."""
    return _PACKAGE_DIR / "harness"


def _home() -> Path:
    """The user's home folder. Raises UsageError where there is none to tell (HOME unset and no
    passwd entry for this uid, as for a container's arbitrary uid: Path.home() raises RuntimeError)."""
    try:
        return Path.home()
    except RuntimeError:
        raise UsageError(
            f"cannot tell this user's home folder: HOME is not set and uid {os.getuid()} has no passwd entry",
            hint="set HOME, or ENVBUILDER_DATA_DIR and ENVBUILDER_CACHE_DIR",
        ) from None


def cache_dir() -> Path:
    """ENVBUILDER_CACHE_DIR, else $XDG_CACHE_HOME/envbuilder, else ~/.cache/envbuilder: what can be
    rebuilt at any time (the compiled matrix)."""
    if os.environ.get("ENVBUILDER_CACHE_DIR"):
        return Path(os.environ["ENVBUILDER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(_home() / ".cache")
    return Path(base) / "envbuilder"


def user_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's envbuilder folder: ENVBUILDER_DATA_DIR, else $XDG_DATA_HOME/envbuilder, else
    ~/.local/share/envbuilder. Raises UsageError where there is no home folder to tell."""
    env = os.environ if env is None else env
    if env.get("ENVBUILDER_DATA_DIR"):
        return Path(env["ENVBUILDER_DATA_DIR"])
    base = env.get("XDG_DATA_HOME") or str(_home() / ".local" / "share")
    return Path(base) / "envbuilder"


def entrypoint_script() -> Path:
    """The entrypoint every image gets (the driver check at start-up, then the command)."""
    return _PACKAGE_DIR / "image" / "entrypoint.sh"
