"""`envbuilder run --monitor`: NVML telemetry of the GPUs a job uses (the harness's sampler, one per
GPU on background threads), and the files it leaves: telemetry.json and the diagnosis
(diagnosis.py holds the rules).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.harness.telemetry import CLOCK_EVENT_REASONS, FIELDS, Sampler, load_nvml
from envbuilder.run.diagnosis import Finding, GpuSeries, format_diagnosis

# The sampler keeps its own time under this share, as in certification (docs/harness.md): NVML
# samples cost 4-10 ms on the H200 VMs, so a GPU's sampler may run less often than `interval`.
MAX_DUTY = 0.005


class Monitor:
    """Samples the given GPUs (NVML indices; None = all) on background threads while a job runs.

    NVML missing or failing is not an error: `available` is False and `why` says why.
    """

    def __init__(
        self, indices: Sequence[int] | None = None, interval: float = 1.0, max_samples: int = 86_400
    ) -> None:
        self.interval = interval
        self.why = ""
        self._samplers: list[tuple[GpuSeries, Sampler]] = []
        nvml, why = load_nvml()
        self._nvml = nvml
        if nvml is None:
            self.why = why
            return
        try:
            count = int(nvml.nvmlDeviceGetCount())
            for i in indices if indices is not None else range(count):
                if not 0 <= i < count:
                    continue
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                meta = GpuSeries(
                    index=i,
                    name=_text(nvml.nvmlDeviceGetName(h)),
                    uuid=_text(nvml.nvmlDeviceGetUUID(h)),
                    memory_total_mib=nvml.nvmlDeviceGetMemoryInfo(h).total / 2**20,
                    power_limit_w=_optional(lambda h=h: nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
                )
                sampler = Sampler(nvml, h, interval=interval, max_samples=max_samples, max_duty=MAX_DUTY)
                self._samplers.append((meta, sampler))
        except Exception as exc:  # NVMLError and friends: telemetry is best effort
            self.why = f"NVML: {exc}"
            self._samplers = []
        if not self._samplers and not self.why:
            self.why = "no GPU to sample"

    @property
    def available(self) -> bool:
        return bool(self._samplers)

    def start(self) -> None:
        for _, s in self._samplers:
            s.start()

    def stop(self) -> list[GpuSeries]:
        """Stop sampling; the recorded series, one per GPU."""
        out = []
        for meta, s in self._samplers:
            s.stop()
            data = s.to_json()
            out.append(
                GpuSeries(
                    index=meta.index,
                    name=meta.name,
                    uuid=meta.uuid,
                    memory_total_mib=meta.memory_total_mib,
                    power_limit_w=meta.power_limit_w,
                    series=data["series"],
                )
            )
        if self._nvml is not None:
            _optional(self._nvml.nvmlShutdown)
        return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def write_monitor_files(
    folder: Path, gpus: Sequence[GpuSeries], findings: Sequence[Finding], context: Mapping[str, Any]
) -> tuple[Path, Path]:
    """Write telemetry.json and diagnosis.txt into `folder` (atomically); return both paths.
    Raises OSError when the folder cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema_version": 1,
        "kind": "envbuilder-run-telemetry",
        **context,
        "fields": list(FIELDS),
        "reason_bits": {str(b): n for b, n in CLOCK_EVENT_REASONS.items()},
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "uuid": g.uuid,
                "memory_total_mib": g.memory_total_mib,
                "power_limit_w": g.power_limit_w,
                "series": {k: list(v) for k, v in g.series.items()},
            }
            for g in gpus
        ],
        "diagnosis": [f.to_dict() for f in findings],
    }
    telemetry = folder / "telemetry.json"
    diagnosis = folder / "diagnosis.txt"
    write_text_atomic(telemetry, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_text_atomic(diagnosis, format_diagnosis(findings))
    return telemetry, diagnosis
