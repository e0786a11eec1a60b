"""CDI specs for this host's GPUs, written without the NVIDIA Container Toolkit: what
`envbuilder gpu cdi-spec` writes (and `doctor` reads back), in the Container Device Interface
format (cncf-tags/container-device-interface, SPEC.md; validated against its schema in the tests).

Devices: one per GPU by index ("0") and by UUID, and "all". Shared edits: the control nodes, the
driver's libraries, its programs, IPC sockets and firmware (driver_files.py). No hooks: the
Toolkit's nvidia-cdi-hook (symlinks, ldcache update) is not there, so each library is mounted under
every name the loader looks for, in the container's multiarch folder (/usr/lib/x86_64-linux-gnu),
which the loader searches without a cache; Triton, which asks `ldconfig -p` for libcuda, is told
the folder by TRITON_LIBCUDA_PATH.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from envbuilder.atomic import write_text_atomic
from envbuilder.bounded import load_yaml, read_bounded
from envbuilder.errors import NoGpuError, UsageError
from envbuilder.host.driver_files import CONTAINER_BIN_DIR, DriverFiles, multiarch_lib_dir

KIND = "nvidia.com/gpu"
MOUNT_OPTIONS = ("ro", "nosuid", "nodev", "rbind", "rprivate")  # as nvidia-ctk writes them
# cdiVersion releases, oldest first (specs-go/version.go); the spec says the oldest that has every
# feature it uses, as nvidia-ctk does, so that older runtimes (Docker 25/26 vendor CDI 0.6-0.7) read it.
CDI_VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
GENERATOR = "envbuilder gpu cdi-spec"


@dataclass(frozen=True, slots=True, kw_only=True)
class CdiSpec:
    """A CDI spec document and what it was made from, ready to print or write."""

    doc: dict[str, Any]
    files: DriverFiles
    container_lib_dir: str

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(str(d["name"]) for d in self.doc["devices"])

    def render(self, fmt: str = "yaml") -> str:
        """The document as YAML (nvidia-ctk's format, with a header saying how it was made) or JSON."""
        if fmt == "json":
            return json.dumps(self.doc, indent=2) + "\n"
        header = (
            f"# CDI spec for {KIND}, written by `{GENERATOR}` (driver {self.files.driver}).\n"
            "# Regenerate it after a driver update: the library paths carry the driver version.\n"
        )
        return header + yaml.safe_dump(self.doc, sort_keys=False, default_flow_style=False)

    def summary(self, path: str | None) -> dict[str, Any]:
        """The `--json` result: where it went, the devices, the counts and the notes."""
        edits = self.doc["containerEdits"]
        return {
            "schema_version": 1,
            "path": path,
            "kind": KIND,
            "cdi_version": self.doc["cdiVersion"],
            "driver": self.files.driver,
            "devices": list(self.device_names),
            "device_nodes": [n["path"] for n in edits["deviceNodes"]] + [g.path for g in self.files.gpus],
            "mounts": len(edits["mounts"]),
            "libraries": [lib.path for lib in self.files.libraries],
            "programs": [p for _, p in self.files.programs],
            "container_lib_dir": self.container_lib_dir,
            "notes": list(self.files.notes),
            "spec": self.doc,
        }


def _node(path: str, root: Path) -> dict[str, str]:
    # hostPath only where the host's file is elsewhere (a driver root other than /).
    node = {"path": path}
    if root != Path("/"):
        node["hostPath"] = str(root / path.lstrip("/"))
    return node


def _mount(host: str, container: str, root: Path) -> dict[str, Any]:
    return {
        "hostPath": str(root / host.lstrip("/")),
        "containerPath": container,
        "options": list(MOUNT_OPTIONS),
    }


def minimum_cdi_version(doc: Mapping[str, Any]) -> str:
    """The oldest cdiVersion that has every feature `doc` uses, for the features this module can
    write (the rules of specs-go/version.go): a device name starting with a digit or a device node
    with hostPath needs 0.5.0, a mount with a type 0.4.0, annotations or a dotted class 0.6.0."""
    version = "0.3.0"
    edits = [doc.get("containerEdits") or {}, *((d.get("containerEdits") or {}) for d in doc["devices"])]

    def at_least(v: str) -> None:
        nonlocal version
        version = max(version, v, key=CDI_VERSIONS.index)

    if any("type" in m for e in edits for m in e.get("mounts", ())):
        at_least("0.4.0")
    if any(str(d["name"])[:1].isdigit() for d in doc["devices"]):
        at_least("0.5.0")
    if any("hostPath" in n for e in edits for n in e.get("deviceNodes", ())):
        at_least("0.5.0")
    if doc.get("annotations") or any(d.get("annotations") for d in doc["devices"]):
        at_least("0.6.0")
    if "." in str(doc["kind"]).partition("/")[2]:
        at_least("0.6.0")
    return version


def build_cdi_spec(files: DriverFiles, *, root: Path = Path("/"), machine: str | None = None) -> CdiSpec:
    """The spec for `files` (paths in it are host paths under `root`, container paths as in a real
    host). Pure."""
    lib_dir = multiarch_lib_dir(machine)
    mounts = []
    for lib in files.libraries:
        for name in lib.names:
            mounts.append(_mount(lib.path, f"{lib_dir}/{name}", root))
    for name, host in files.programs:
        mounts.append(_mount(host, f"{CONTAINER_BIN_DIR}/{name}", root))
    for path in (*files.ipc, *files.firmware):
        mounts.append(_mount(path, path, root))
    devices: list[dict[str, Any]] = []
    for gpu in files.gpus:
        # A fresh dict per device: shared ones would come out as YAML anchors and aliases.
        for name in (str(gpu.index), *([gpu.uuid] if gpu.uuid else [])):
            devices.append({"name": name, "containerEdits": {"deviceNodes": [_node(gpu.path, root)]}})
    devices.append(
        {"name": "all", "containerEdits": {"deviceNodes": [_node(g.path, root) for g in files.gpus]}}
    )
    doc: dict[str, Any] = {
        "cdiVersion": "",
        "kind": KIND,
        "devices": devices,
        "containerEdits": {
            # void: a Toolkit hook that also runs must not inject the GPUs a second time (nvidia-ctk
            # writes the same); TRITON_LIBCUDA_PATH: there is no ldcache hook to update the cache.
            "env": ["NVIDIA_VISIBLE_DEVICES=void", f"TRITON_LIBCUDA_PATH={lib_dir}"],
            "deviceNodes": [_node(n, root) for n in files.control_nodes],
            "mounts": mounts,
        },
    }
    doc["cdiVersion"] = minimum_cdi_version(doc)
    return CdiSpec(doc=doc, files=files, container_lib_dir=lib_dir)


def spec_format(path: Path) -> str:
    """json for a .json file, else yaml (the CDI loaders read .json, .yaml and .yml)."""
    return "json" if path.suffix == ".json" else "yaml"


def write_cdi_spec(spec: CdiSpec, path: Path) -> None:
    """Write the spec to `path` atomically (a CDI watcher never sees half a file). Raises
    UsageError when the folder is missing or not writable, or the name is not .yaml/.yml/.json."""
    if path.suffix not in (".yaml", ".yml", ".json"):
        raise UsageError(
            f"{path}: a CDI spec file must end in .yaml, .yml or .json (the daemon ignores others)",
            hint="e.g. --out /etc/cdi/nvidia.yaml",
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, spec.render(spec_format(path)))
    except OSError as exc:
        raise UsageError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="write /etc/cdi or /var/run/cdi as root (sudo), or choose another --out",
        ) from exc


def require_files(files: DriverFiles | str) -> DriverFiles:
    """The driver files, or NoGpuError saying why there are none."""
    if isinstance(files, str):
        raise NoGpuError(
            f"cannot write a CDI spec: {files}",
            hint="run `envbuilder doctor` on the GPU host to see what is missing",
        )
    return files


# --------------------------------------------------------------------------- reading specs back


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecCheck:
    """What doctor says about one spec file on disk."""

    path: str
    devices: tuple[str, ...]
    missing: tuple[str, ...]  # host paths the spec names that do not exist (a stale spec)
    error: str | None = None  # unreadable or not a CDI document


def check_spec_file(path: str, root: Path = Path("/")) -> SpecCheck:
    """Read a spec for nvidia.com/gpu and list the host paths it names that are gone (after a
    driver update, a spec still naming libcuda.so.<old version> starts containers without a
    driver). Never raises."""
    full = root / path.lstrip("/")
    try:
        doc = load_yaml(read_bounded(full).decode("utf-8", errors="replace"))  # FIFO, device: refused
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return SpecCheck(path=path, devices=(), missing=(), error=f"unreadable: {exc}")
    if not isinstance(doc, dict) or not isinstance(doc.get("devices"), list):
        return SpecCheck(path=path, devices=(), missing=(), error="not a CDI spec (no devices list)")
    names = tuple(str(d.get("name")) for d in doc["devices"] if isinstance(d, dict))
    edits: list[Mapping[str, Any]] = [doc.get("containerEdits") or {}]
    edits += [d.get("containerEdits") or {} for d in doc["devices"] if isinstance(d, dict)]
    wanted: list[str] = []
    for e in edits:
        wanted += [str(m.get("hostPath")) for m in e.get("mounts") or () if isinstance(m, dict)]
        for n in e.get("deviceNodes") or ():
            if isinstance(n, dict):
                wanted.append(str(n.get("hostPath") or n.get("path")))
    missing = tuple(p for p in dict.fromkeys(wanted) if not (root / p.lstrip("/")).exists())
    return SpecCheck(path=path, devices=names, missing=missing)


def describe_missing(missing: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(missing[:limit])
    return shown + (f" and {len(missing) - limit} more" if len(missing) > limit else "")
