"""Every expected failure of envbuilder, one class per family, each with its exit code.

Core modules raise these; the CLI prints `envbuilder: error: ...` and `hint: ...` and exits
with `exit_code`. The table of codes is documented in README.md (Exit codes); keep them in sync.
"""

from __future__ import annotations

from collections.abc import Iterable

# How many lines of a failed tool's own output (uv, BuildKit, debootstrap) an error shows.
LOG_TAIL_LINES = 40


class EnvbuilderError(Exception):
    """Base of all expected failures. `message` says what failed and why; `hint` what to do.

    Where the failure has a place, it is also kept as fields (the message already names them):
    `file` (a path as the user knows it), `line`, `field` (dotted, e.g. "certify.thresholds.x")
    and the refused `value`, so callers and tests need not parse the message. Where a tool
    failed, `log` holds the last lines of its output (log_tail), printed below the one-line
    message, each line on its own.
    """

    exit_code = 1

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        value: object = None,
        log: Iterable[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.log = tuple(log)
        self.file = file
        self.line = line
        self.field = field
        self.value = value

    def __str__(self) -> str:
        return self.message

    def fields(self) -> dict[str, object]:
        """The place of the failure, only what is known: {file, line, field, value}."""
        known = {"file": self.file, "line": self.line, "field": self.field, "value": self.value}
        return {k: v for k, v in known.items() if v is not None}


def log_tail(lines: Iterable[str], count: int = LOG_TAIL_LINES) -> tuple[str, ...]:
    """The last `count` non-blank lines of a tool's output, given as text chunks (each may hold
    several lines: they are split, trailing blanks and carriage returns dropped)."""
    kept = [ln.rstrip() for chunk in lines for ln in chunk.splitlines() if ln.strip()]
    return tuple(kept[-count:]) if count > 0 else ()


class UsageError(EnvbuilderError):
    """Bad command-line input: malformed version, unknown GPU name, impossible requirement."""

    exit_code = 2


class MatrixError(EnvbuilderError):
    """A matrices/ file is missing, corrupt or breaks an invariant (names file, row, field)."""

    exit_code = 3


# Exit 4 (no compatible stack) is resolve.model.NoCompatibleStackError: it carries the Resolution,
# a type of the resolve stage, which this module (below every stage) does not import.


class NoGpuError(EnvbuilderError):
    """No NVIDIA GPU or driver was found on this machine where one is needed."""

    exit_code = 5


class DoctorFailedError(EnvbuilderError):
    """`envbuilder doctor` found at least one failing check."""

    exit_code = 6


class DockerUnavailableError(EnvbuilderError):
    """The Docker daemon cannot be reached."""

    exit_code = 7


class BuildKitMissingError(EnvbuilderError):
    """No docker CLI that can build with BuildKit was found."""

    exit_code = 8


class BuildFailedError(EnvbuilderError):
    """`docker build` failed; nothing was tagged and no lock file was written."""

    exit_code = 9


class SpecError(EnvbuilderError):
    """An image spec (images/NAME.yaml) or lock file is invalid, or a value in it is refused."""

    exit_code = 10


class CertificationFailedError(EnvbuilderError):
    """The certification harness ran and the image failed at least one step."""

    exit_code = 11


class CertificateRefusedError(EnvbuilderError):
    """A certificate does not cover this host or image, or has been tampered with."""

    exit_code = 12


class RegistryError(EnvbuilderError):
    """A push to or pull from a registry failed (unreachable, refused, or an answer that breaks the
    distribution spec)."""

    exit_code = 13


class RegistryAuthError(RegistryError):
    """The registry wants credentials that are missing, or refused the ones given."""

    exit_code = 14


class RegistryNotFoundError(RegistryError):
    """The registry has no such repository, tag or digest."""

    exit_code = 15


class SigningKeyError(EnvbuilderError):
    """A signing key cannot be made, found, read or unlocked (wrong passphrase), or a trust policy
    file is invalid (names the file and the field)."""

    exit_code = 16


class StoreError(EnvbuilderError):
    """The certificate store (or a certificate file) cannot be opened, read or written; names the file."""

    exit_code = 17


class OutputError(EnvbuilderError):
    """An output file (a lock, a render, an export) cannot be written: a missing folder, no
    permission, a full disk, or a file that is not envbuilder's to replace (names the file)."""

    exit_code = 18


class SchedulerError(EnvbuilderError):
    """The cluster's scheduler (Slurm's commands, the Kubernetes API or kubectl) is missing,
    unreachable, or refused a job; names the command and what it said."""

    exit_code = 23


class ContainerRuntimeError(EnvbuilderError):
    """A container runtime other than the Docker daemon (Podman, Apptainer, enroot) is missing or
    failed (build, certify, run, export)."""

    exit_code = 24


class LockError(EnvbuilderError):
    """Python packages could not be locked, fetched or verified: no solution, an index that cannot
    be reached, a wheel whose sha256 differs from the lock's."""

    exit_code = 20


class PackageIndexError(EnvbuilderError):
    """A package index (PyPI, a simple index, a wheelhouse) or a wheel on it cannot be read."""

    exit_code = 21


class NotGpuCertifiedError(EnvbuilderError):
    """`--require-gpu`: only the CPU path could be certified (verdict certified-cpu-only), or no
    GPU is there to certify on."""

    exit_code = 22


class Interrupted(EnvbuilderError):
    """The user pressed Ctrl-C; work in progress was rolled back."""

    exit_code = 130


class Terminated(Interrupted):
    """envbuilder was stopped by SIGTERM or SIGHUP (a job scheduler, `kill`, a closed terminal);
    work in progress was rolled back as on Ctrl-C."""

    exit_code = 143
