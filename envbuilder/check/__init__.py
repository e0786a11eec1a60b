"""`envbuilder check IMAGE`: the job-start gate (certificate coverage, node health, the image's
short mode on each GPU), one verdict PASS / WARN / FAIL. docs/check.md."""

from envbuilder.check.findings import EXIT_CODES, Finding, verdict_of
from envbuilder.check.gate import CheckReport, check_image

__all__ = ["EXIT_CODES", "CheckReport", "Finding", "check_image", "verdict_of"]
