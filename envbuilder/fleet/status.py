"""What a fleet knows of an image, per node class: the newest certificate of each class (the class
is the one its job stated, sealed in the certificate's run.scheduler; a certificate made outside a
fleet counts as the class of its host), from the local store and from signed attestations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envbuilder.attest.discovery import newest_first
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.record import number, section, text


def certificate_class(cert: Certificate) -> str:
    """The node class a certificate covers: its scheduler record's, else `host:FINGERPRINT`."""
    sched = section(cert.run.get("scheduler"))
    cls = text(sched.get("class"))
    if cls:
        return cls
    return f"host:{(cert.host.fingerprint or 'unknown').removeprefix('sha256:')[:12]}"


def key_throughput(cert: Certificate | None) -> str:
    """The fastest passing training step's images per second, with the step's name; '-' for none."""
    best: tuple[float, str] | None = None
    for step in cert.steps if cert is not None else ():
        ips = number(step.metrics.get("images_per_s"))
        if step.status == "pass" and ips is not None and (best is None or ips > best[0]):
            best = (ips, step.name)
    return f"{best[0]:,.0f} img/s ({best[1]})" if best else "-"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassStatus:
    node_class: str
    certificate: Certificate
    source: str  # "local" or "signed by KEY"

    @property
    def verdict(self) -> str:
        return self.certificate.verdict

    @property
    def gpus(self) -> str:
        names = sorted({g.name or "?" for g in self.certificate.host.gpus})
        n = len(self.certificate.host.gpus)
        return f"{n}x {', '.join(names)}" if n else "none (CPU path)"

    @property
    def driver(self) -> str | None:
        return self.certificate.host.driver

    @property
    def issued_at(self) -> str | None:
        return self.certificate.issued_at

    def to_dict(self) -> dict[str, Any]:
        sched = section(self.certificate.run.get("scheduler"))
        return {
            "class": self.node_class,
            "verdict": self.verdict,
            "certificate": self.certificate.id,
            "throughput": key_throughput(self.certificate),
            "gpus": [{"name": g.name, "cc": g.cc} for g in self.certificate.host.gpus],
            "driver": self.driver,
            "issued_at": self.issued_at,
            "source": self.source,
            "scheduler": dict(sched),
        }


def class_status(
    local: Iterable[Certificate], attested: Sequence[tuple[Certificate, str]] = ()
) -> list[ClassStatus]:
    """The newest certificate of each class, sorted by class; a certificate found both here and
    signed in the registry is said to be signed."""
    signed: Mapping[str, str] = {c.id: key for c, key in attested}
    everything = newest_first([*local, *(c for c, _ in attested)])
    seen: dict[str, ClassStatus] = {}
    for cert in everything:
        cls = certificate_class(cert)
        if cls not in seen:
            source = f"signed by {signed[cert.id]}" if cert.id in signed else "local store"
            seen[cls] = ClassStatus(node_class=cls, certificate=cert, source=source)
    return [seen[k] for k in sorted(seen)]
