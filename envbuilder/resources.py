"""Locates envbuilder's data folders (matrices/, templates/, images/) in a checkout or a wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` (matrices, templates or images): the checkout's top-level folder when
    running from a source tree or editable install, else the copy packed into the wheel."""
    in_checkout = _PACKAGE_DIR.parent / name
    if in_checkout.is_dir():
        return in_checkout
    return _PACKAGE_DIR / "_data" / name


def matrices_dir() -> Path:
    return data_dir("matrices")


def templates_dir() -> Path:
    return data_dir("templates")


def images_dir() -> Path:
    return data_dir("images")


def harness_dir() -> Path:
    """The self-contained certification payload that is copied into every image."""
    return _PACKAGE_DIR / "harness"
