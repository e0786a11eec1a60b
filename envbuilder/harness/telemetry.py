"""NVML access and the background telemetry sampler (one thread for the whole certification).

Each run marks its time window; per-run summaries are cut from the one time series, which the
result keeps (columnar, compact). pynvml comes from nvidia-ml-py when the image has it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

# NVML clock-event ("throttle") reason bits: nvml.h, nvmlClocksEventReason* (stable ABI).
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that mean the GPU ran slower than it could because of power or heat.
SLOWDOWN_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
FIELDS = ("util_gpu", "util_mem", "mem_used_mib", "power_w", "temp_c", "sm_clock_mhz", "reasons")
# With pcie=True (run --monitor; certification does not ask): PCIe traffic in GB/s from the GPU's
# side, rx = host to device. From NVML's cumulative byte counters (NVML_FI_DEV_PCIE_COUNT_RX/TX_BYTES,
# one cheap field-values call), else nvmlDeviceGetPcieThroughput (KB/s over a 20 ms window each).
PCIE_FIELDS = ("pcie_rx_gbs", "pcie_tx_gbs")
_FI_PCIE_TX_BYTES, _FI_PCIE_RX_BYTES = 197, 198  # nvml.h NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES
_PCIE_UTIL_TX, _PCIE_UTIL_RX = 0, 1  # nvml.h nvmlPcieUtilCounter_t


def load_nvml() -> tuple[Any | None, str]:
    """(pynvml module initialised, "") or (None, why not)."""
    try:
        import pynvml
    except ImportError:
        return None, "pynvml (nvidia-ml-py) is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as e:
        return None, f"NVML init failed: {e}"
    return pynvml, ""


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


def _reasons_fn(nvml: Any) -> Any:
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    return fn or nvml.nvmlDeviceGetCurrentClocksThrottleReasons


class Sampler:
    """Samples one GPU on a daemon thread until stop(): every `interval` seconds, or less often
    when one sample costs so much that its share of the time would pass `max_duty`.

    NVML calls are not free: on the H200 VMs one sample (six queries) took 3.7-10.3 ms, so 1 Hz meant
    0.37-0.96% of the time, and 4 Hz slowed training by 3.4%. With `max_duty` the period stretches to
    mean sample cost / max_duty (measured as it goes), so the sampler cannot become the overhead.
    """

    def __init__(
        self,
        nvml: Any,
        handle: Any,
        interval: float = 1.0,
        max_samples: int = 4000,
        max_duty: float | None = None,
        pcie: bool = False,
    ):
        self.nvml, self.handle, self.interval, self.max_samples = nvml, handle, interval, max_samples
        self.max_duty = max_duty
        fields = FIELDS + (PCIE_FIELDS if pcie else ())
        self.series: dict[str, list[Any]] = {"t": [], **{f: [] for f in fields}}
        self._pcie_last: tuple[float, int, int] | None = None  # (time, rx bytes, tx bytes)
        self.unsupported: dict[str, str] = {}
        self.windows: dict[str, tuple[float, float]] = {}
        self.errors = 0
        self._sample_seconds = 0.0
        self._sample_count = 0
        self._query_seconds: dict[str, float] = {}
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        self._queries: dict[str, Callable[[], Any]] = {
            "util": lambda: nvml.nvmlDeviceGetUtilizationRates(handle),
            "mem_used_mib": lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20,
            "power_w": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "temp_c": lambda: nvml.nvmlDeviceGetTemperature(handle, 0),  # 0 = NVML_TEMPERATURE_GPU
            "sm_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, 1),  # 1 = NVML_CLOCK_SM
            "reasons": lambda: int(_reasons_fn(nvml)(handle)),
        }
        if pcie:
            self._queries["pcie"] = self._pcie_rates

    def _pcie_rates(self) -> tuple[float | None, float | None]:
        """(rx, tx) GB/s: the byte counters' change since the last sample (None on the first),
        or the throughput query where the counters are not supported."""
        nvml, handle = self.nvml, self.handle
        if "pcie_counters" not in self.unsupported:
            try:
                tx, rx = nvml.nvmlDeviceGetFieldValues(handle, [_FI_PCIE_TX_BYTES, _FI_PCIE_RX_BYTES])
                if tx.nvmlReturn != 0 or rx.nvmlReturn != 0:
                    raise RuntimeError(f"field values returned {tx.nvmlReturn}/{rx.nvmlReturn}")
                now, rx_b, tx_b = time.monotonic(), int(rx.value.ullVal), int(tx.value.ullVal)
                last, self._pcie_last = self._pcie_last, (now, rx_b, tx_b)
                if last is None or now <= last[0]:
                    return None, None
                dt = now - last[0]
                return (rx_b - last[1]) / dt / 1e9, (tx_b - last[2]) / dt / 1e9
            except Exception as e:
                self.unsupported["pcie_counters"] = str(e) or type(e).__name__
        rx_kb = nvml.nvmlDeviceGetPcieThroughput(handle, _PCIE_UTIL_RX)
        tx_kb = nvml.nvmlDeviceGetPcieThroughput(handle, _PCIE_UTIL_TX)
        return rx_kb * 1e3 / 1e9, tx_kb * 1e3 / 1e9

    def now(self) -> float:
        """Seconds since the sampler was made: the time base of the series and the windows."""
        return time.monotonic() - self._t0

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2 * self.interval + 1)

    def pause(self) -> None:
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    def mark(self, name: str, start: float, end: float) -> None:
        self.windows[name] = (start, end)

    def period(self) -> float:
        """Seconds between samples now: `interval`, stretched to keep within `max_duty`."""
        if self.max_duty and self._sample_count:
            return max(self.interval, self._sample_seconds / self._sample_count / self.max_duty)
        return self.interval

    def _loop(self) -> None:
        while not self._stop.wait(self.period()):
            if not self._paused.is_set() and len(self.series["t"]) < self.max_samples:
                self.sample()

    def cost(self) -> dict[str, Any]:
        """The sampler's own cost: mean wall time of one sample (and of each query in it), the
        period in force and the duty cycle (mean cost / period)."""
        n = self._sample_count
        mean = self._sample_seconds / n if n else None
        period = self.period()
        return {
            "sample_count": n,
            "sample_cost_ms": round(mean * 1000, 3) if mean is not None else None,
            "query_cost_ms": {k: round(v / n * 1000, 3) for k, v in self._query_seconds.items()} if n else {},
            "interval_s": self.interval,
            "period_s": round(period, 3),
            "max_duty": self.max_duty,
            "sampler_duty_cycle": round(mean / period, 5) if mean is not None else None,
        }

    def sample(self) -> None:
        t0 = time.perf_counter()
        try:
            self._sample()
        finally:
            self._sample_seconds += time.perf_counter() - t0
            self._sample_count += 1

    def _sample(self) -> None:
        row: dict[str, Any] = {"t": round(self.now(), 3)}
        for key, query in self._queries.items():
            if key in self.unsupported:
                value: Any = None
            else:
                q0 = time.perf_counter()
                try:
                    value = query()
                except Exception as e:  # NVMLError_NotSupported on some parts / in VMs
                    self.errors += 1
                    self.unsupported[key] = str(e) or type(e).__name__
                    value = None
                self._query_seconds[key] = self._query_seconds.get(key, 0.0) + time.perf_counter() - q0
            if key == "util":
                row["util_gpu"] = getattr(value, "gpu", None)
                row["util_mem"] = getattr(value, "memory", None)
            elif key == "pcie":
                rx, tx = value if value is not None else (None, None)
                row["pcie_rx_gbs"] = round(rx, 3) if rx is not None else None
                row["pcie_tx_gbs"] = round(tx, 3) if tx is not None else None
            elif isinstance(value, float):
                row[key] = round(value, 1)
            else:
                row[key] = value
        with self._lock:
            for k, v in row.items():
                self.series[k].append(v)

    def summarize(self, start: float | None = None, end: float | None = None) -> dict[str, Any]:
        """mean/max of each field (and clock-event reasons as fractions of samples) in a window."""
        with self._lock:
            ts = list(self.series["t"])
            idx = [i for i, t in enumerate(ts) if (start is None or t >= start) and (end is None or t <= end)]
            cols = {f: [self.series[f][i] for i in idx] for f in FIELDS}
        out: dict[str, Any] = {"samples": len(idx)}
        for f in FIELDS[:-1]:
            vals = [float(v) for v in cols[f] if v is not None]
            if vals:
                out[f] = {"mean": round(sum(vals) / len(vals), 2), "max": max(vals)}
        masks = [int(m) for m in cols["reasons"] if m is not None]
        if masks:
            out["clock_event_reasons"] = {
                name: round(sum(1 for m in masks if m & bit) / len(masks), 3)
                for bit, name in CLOCK_EVENT_REASONS.items()
                if any(m & bit for m in masks)
            }
            out["slowdown_fraction"] = round(sum(1 for m in masks if m & SLOWDOWN_BITS) / len(masks), 3)
        return out

    def window_summary(self, name: str) -> dict[str, Any]:
        if name not in self.windows:
            return {"samples": 0}
        return self.summarize(*self.windows[name])

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            series = {k: list(v) for k, v in self.series.items()}
        return {
            "available": True,
            "interval_s": self.interval,
            "cost": self.cost(),
            "summary": self.summarize(),
            "windows": {k: [round(a, 3), round(b, 3)] for k, (a, b) in self.windows.items()},
            "unsupported": dict(self.unsupported),
            "series": series,
            "reason_bits": {str(b): n for b, n in CLOCK_EVENT_REASONS.items()},
        }


def slowdown_warnings(summary: dict[str, Any]) -> list[str]:
    """Warnings for power/thermal clock events seen during a window."""
    frac = summary.get("slowdown_fraction") or 0.0
    if frac <= 0:
        return []
    seen = [
        n
        for n, v in (summary.get("clock_event_reasons") or {}).items()
        if v and n not in ("gpu_idle", "applications_clocks_setting", "sync_boost")
    ]
    return [f"GPU clocks slowed in {frac:.0%} of samples ({', '.join(seen)})"]
