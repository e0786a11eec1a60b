"""The doctor stage: the field guide's first step, one ok/warn/fail line per check (checks.py)."""
