"""The hypothesis budgets (tests/unit/test_fuzz_*.py): `ci`, the default, keeps the unit suite to
seconds and is seeded (a CI failure reproduces); `fuzz` (`make fuzz`, HYPOTHESIS_PROFILE=fuzz) runs
10,000 inputs per test (FUZZ_EXAMPLES=N changes that). Neither keeps an example database in the checkout."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
settings.register_profile("ci", max_examples=25, derandomize=True, **_COMMON)  # type: ignore[arg-type]
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10000"))
settings.register_profile("fuzz", max_examples=FUZZ_EXAMPLES, **_COMMON)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
