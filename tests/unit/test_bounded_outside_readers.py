"""Three more readers of files from outside (issue 23, left from round 3): the Kubernetes nodes file
(`fleet --scheduler k8s --nodes FILE`), the CDI specs doctor checks, and the sidecar of an exported
SIF/squashfs file. Each refuses a FIFO unread (no hang) and a file past the size limit, with the
error its caller already turns into one line; a well-formed file is still read."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from envbuilder.bounded import MAX_BYTES
from envbuilder.engine.hpc import SIDECAR_KIND, read_exported, sidecar_path
from envbuilder.errors import UsageError
from envbuilder.fleet.kubernetes import read_nodes_file
from envbuilder.host.cdi import check_spec_file

T = TypeVar("T")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _huge(path: Path) -> Path:
    path.write_bytes(b"#" * (MAX_BYTES + 10))
    return path


def _returns_quickly(fn: Callable[..., T], *args: object) -> T:
    """Runs fn(*args) in a thread and fails the test if it blocks (a FIFO read would)."""
    box: dict[str, object] = {}

    def go() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the reader blocked on the file"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


@pytest.mark.parametrize("make", [_fifo, _huge], ids=["fifo", "huge"])
def test_the_nodes_file_is_refused_unread(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / "nodes.json")
    with pytest.raises(UsageError, match="cannot read"):
        _returns_quickly(read_nodes_file, path)


def test_a_nodes_file_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"items": [{"metadata": {"name": "n1", "labels": {"a": "b"}}}]}))
    nodes = read_nodes_file(path)
    assert [n.name for n in nodes] == ["n1"] and nodes[0].labels == {"a": "b"}


@pytest.mark.parametrize("make", [_fifo, _huge], ids=["fifo", "huge"])
def test_a_cdi_spec_is_refused_unread(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    make(tmp_path / "nvidia.yaml")
    check = _returns_quickly(check_spec_file, "/nvidia.yaml", tmp_path)
    assert check.error is not None and check.error.startswith("unreadable") and check.devices == ()


def test_a_cdi_spec_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "nvidia.yaml").write_text(
        "devices:\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"
    )
    check = check_spec_file("/nvidia.yaml", tmp_path)
    assert check.error is None and check.devices == ("all",) and check.missing == ("/dev/nvidia0",)


@pytest.mark.parametrize("make", [_fifo, _huge], ids=["fifo", "huge"])
def test_an_export_sidecar_is_refused_unread(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    sif = tmp_path / "img.sif"
    sif.write_bytes(b"sif")
    make(sidecar_path(sif))
    with pytest.raises(UsageError, match="no readable sidecar"):
        _returns_quickly(read_exported, sif)


def test_an_export_sidecar_is_still_read(tmp_path: Path) -> None:
    sif = tmp_path / "img.sif"
    sif.write_bytes(b"sif")
    doc = {"kind": SIDECAR_KIND, "format": "sif", "sha256": "x", "image": {"id": "sha256:abc"}}
    sidecar_path(sif).write_text(json.dumps(doc))
    assert read_exported(sif, check_hash=False).image.id == "sha256:abc"
