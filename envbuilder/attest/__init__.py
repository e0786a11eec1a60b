"""Signed attestations: in-toto statements made from certificates, DSSE envelopes signed with
keys the user controls (securesystemslib + cryptography, offline), the trust policy, and the
attaching to / fetching from the image's registry (envbuilder/registry/).

`fetch_verified(reference, policy=...)` is the one way from an image reference to the
certificates that can be trusted; `attach_certificates` the one way there."""

from envbuilder.attest.discovery import AttestationReport, fetch_verified
from envbuilder.attest.envelope import MEDIA_TYPE, REASONS, Refused, Verified, sign_statement, verify_envelope
from envbuilder.attest.policy import TrustedKey, TrustPolicy, choose_policy
from envbuilder.attest.publish import Attached, attach_certificates

__all__ = [
    "MEDIA_TYPE",
    "REASONS",
    "Attached",
    "AttestationReport",
    "Refused",
    "TrustPolicy",
    "TrustedKey",
    "Verified",
    "attach_certificates",
    "choose_policy",
    "fetch_verified",
    "sign_statement",
    "verify_envelope",
]
