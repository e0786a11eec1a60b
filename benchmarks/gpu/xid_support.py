"""Does this GPU machine deliver NVML's Xid events to `run --monitor`? (issue 16 item 3; ~5 s, no
torch, no Docker.) The real envbuilder.run.xid.XidWatcher against the real NVML: which event types
each GPU supports (nvmlDeviceGetSupportedEventTypes), whether registering for
nvmlEventTypeXidCriticalError works, and a few timed-out waits (nvmlEventSetWait_v2) that must
come back as timeouts, not errors. No Xid is provoked. Writes $OUT/xid_support.json and prints it.
Run from the repository root on the GPU machine:
    OUT=/tmp/xid python3 benchmarks/gpu/xid_support.py [SECONDS]
"""

# ruff: noqa
# mypy: ignore-errors
import json, os, sys, time
from pathlib import Path

sys.path.insert(0, os.getcwd())
from envbuilder.harness.telemetry import load_nvml
from envbuilder.run.xid import EVENT_TYPE_XID, XidWatcher

out = Path(os.environ.get("OUT", "/tmp"))
out.mkdir(parents=True, exist_ok=True)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
nvml, why = load_nvml()
doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": os.uname().nodename}
if nvml is None:
    doc["nvml"] = why
else:
    doc["driver"] = nvml.nvmlSystemGetDriverVersion()
    handles, gpus = {}, []
    for i in range(nvml.nvmlDeviceGetCount()):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        handles[i] = h
        try:
            mask = int(nvml.nvmlDeviceGetSupportedEventTypes(h))
            supported = {"mask": hex(mask), "xid_critical_error": bool(mask & EVENT_TYPE_XID)}
        except Exception as e:
            supported = {"error": str(e) or type(e).__name__}
        gpus.append({"index": i, "name": str(nvml.nvmlDeviceGetName(h)), "supported_event_types": supported})
    t0 = time.monotonic()
    w = XidWatcher(nvml, handles, clock=lambda: time.monotonic() - t0)
    w.start()
    time.sleep(seconds)
    events = w.stop()
    doc.update(
        gpus=gpus,
        watching=w.watching,
        waited_s=seconds,
        unsupported=w.unsupported,  # empty: registered on every GPU and every wait timed out cleanly
        xid_events=[e.to_dict() for e in events],
    )
    nvml.nvmlShutdown()
text = json.dumps(doc, indent=1)
(out / "xid_support.json").write_text(text + "\n")
print(text)
