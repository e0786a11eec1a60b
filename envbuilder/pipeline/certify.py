"""Build -> certify: where a certificate goes once the harness has judged the image. The file
the user named comes first (a full data folder must not lose the run: hostile-inputs D5), then
this machine's store; a certificate the store refused is written to a fallback file and the
error names where it is. `certify` and `up` keep their certificates here."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from envbuilder.atomic import written
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore, write_atomic
from envbuilder.errors import EnvbuilderError, StoreError


@dataclass(frozen=True, slots=True)
class Kept:
    """Where a certificate went: its store ID (None: not stored), the file written (None: none),
    and the error to raise once the caller has printed what it prints (None: all went well)."""

    stored_id: str | None
    path: Path | None
    error: EnvbuilderError | None


def fallback_dirs() -> tuple[Path, ...]:
    """Where a certificate the store could not take is written instead: the temporary folder, then
    the working directory (the data folder is what just failed)."""
    return (Path(tempfile.gettempdir()), Path.cwd())


def keep_certificate(
    cert: Certificate,
    *,
    out_path: Path | None,
    store: bool,
    say: Callable[[str], None] = lambda _line: None,
) -> Kept:
    """Write `cert` to `out_path`, then add it to the store (unless not `store`); the file
    written is said (`wrote PATH`). Nothing is raised: a store that refuses it (StoreError, or
    what the disk said) is Kept.error, naming where the certificate is kept instead; else a file
    that could not be written (OutputError, StoreError) is."""
    kept: Path | None = None
    replaced = False
    out_error: EnvbuilderError | None = None
    if out_path is not None:
        try:
            replaced = write_atomic(out_path, cert.to_json(indent=2) + "\n")
            kept = out_path
        except EnvbuilderError as exc:
            out_error = exc
    stored_id = None
    store_error: EnvbuilderError | None = None
    if store:
        try:
            stored_id = CertStore().add(cert)
        except StoreError as exc:
            store_error = exc
        except OSError as exc:  # what the disk said, should the store let it through
            store_error = StoreError(f"cannot write to the certificate store: {exc}")
    if kept is not None:
        say(written(kept, replaced))
    if store_error is not None:
        return Kept(stored_id, kept, _unstored(store_error, cert, kept))
    return Kept(stored_id, kept, out_error)


def _unstored(exc: EnvbuilderError, cert: Certificate, kept: Path | None) -> StoreError:
    """The store refused the certificate (a full disk, a broken file): the error names where the
    certificate is kept instead (--out, else a fallback file written now), or says it is nowhere."""
    where = f"it is kept in {kept} (--out)" if kept is not None else ""
    tried: list[str] = []
    for folder in () if kept is not None else fallback_dirs():
        path = folder / f"envbuilder-certificate-{cert.id[:12]}.json"
        try:
            write_atomic(path, cert.to_json(indent=2) + "\n")
        except EnvbuilderError as err:
            tried.append(f"{path}: {err.message}")
            continue
        where = f"it was written to {path} instead"
        break
    if not where:
        where = "and it could not be written anywhere (" + "; ".join(tried) + ")"
    return StoreError(
        f"the {cert.verdict} certificate was not stored: {exc.message}; {where}",
        hint="free space in the data folder (ENVBUILDER_DATA_DIR) and certify again; or `envbuilder certs "
        "import FILE` keeps this one, as imported (`run` uses it only with --trust-imported)"
        if kept is not None or "instead" in where
        else "free space, then certify again (--out PATH keeps the certificate on another disk)",
        file=exc.file,
    )
