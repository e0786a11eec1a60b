"""Slurm through its own commands: the node classes of a cluster (`scontrol show node`: GRES type
and count, features, partitions), a probe of one node (`srun nvidia-smi`), a batch job submitted
(`sbatch`) and its state (`squeue`, `scontrol show job`, `sacct` where accounting runs).

Every command goes through a Runner (host.probe's: argv, timeout -> CommandResult), so the unit
tests feed it output recorded from the real cluster of the integration tests.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from envbuilder.errors import SchedulerError, UsageError
from envbuilder.fleet.classes import NodeClass, facts_from_features, with_gpu_model
from envbuilder.host import HostReport, Runner
from envbuilder.host.probe import probe_nvidia_smi, run_command
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import platform_of_machine
from envbuilder.typed import ascii_int
from envbuilder.versions import parse_host_driver, quote_input

SLURM_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 120.0
_FIELD = re.compile(r"(\S+?)=(.*?)(?=\s+[A-Za-z][A-Za-z0-9_:/]*=|\s*$)")
_GRES = re.compile(
    r"^(?P<name>[A-Za-z0-9_.-]+)(?::(?P<type>[A-Za-z0-9_.-]+))?(?::(?P<count>\d+))?(?:\(.*\))?$"
)
# States in which a node takes no job (scontrol's State= can combine them: IDLE+DRAIN).
_UNUSABLE = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "FUTURE", "POWERED_DOWN", "MAINT")
DONE_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)


def slurm_hint(what: str) -> str:
    return f"is Slurm's client installed and the cluster up? ({what}; `sinfo` should answer)"


def parse_fields(line: str) -> dict[str, str]:
    """One record of `scontrol show ... --oneliner`: KEY=VALUE pairs, where a value may hold
    spaces (OS=Linux 6.1 #1 SMP) up to the next KEY=."""
    return {m.group(1): m.group(2).strip() for m in _FIELD.finditer(line.strip())}


@dataclass(frozen=True, slots=True, kw_only=True)
class Gres:
    name: str  # gpu
    type: str | None  # h200
    count: int


def parse_gres(text: str) -> tuple[Gres, ...]:
    """`gpu:h200:8(S:0-1),nic:2` -> Gres entries; `(null)` and malformed items -> nothing."""
    out = []
    for item in re.split(r",(?![^()]*\))", text.strip()):
        m = _GRES.match(item.strip())
        if not m or item.strip() in ("", "(null)"):
            continue
        count = int(m.group("count")) if m.group("count") else 1
        typ: str | None = m.group("type")
        bare = ascii_int(typ) if m.group("count") is None else None
        if bare is not None:  # gpu:4
            count, typ = bare, None
        out.append(Gres(name=m.group("name"), type=typ, count=count))
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmNode:
    name: str
    partitions: tuple[str, ...]
    gres: tuple[Gres, ...]
    features: tuple[str, ...]
    state: str
    cpus: int | None = None
    arch: str | None = None  # `Arch=` as slurmd reports it (uname -m: x86_64, aarch64)

    @property
    def gpus(self) -> tuple[Gres, ...]:
        return tuple(g for g in self.gres if g.name == "gpu")

    @property
    def usable(self) -> bool:
        return not any(s in self.state for s in _UNUSABLE)


def _split(value: str | None) -> tuple[str, ...]:
    if not value or value in ("(null)", "N/A"):
        return ()
    return tuple(sorted(v for v in value.split(",") if v))


def parse_nodes(text: str) -> tuple[SlurmNode, ...]:
    """`scontrol show node --oneliner` output -> nodes."""
    nodes = []
    for line in text.splitlines():
        f = parse_fields(line)
        if "NodeName" not in f:
            continue
        cpus = f.get("CPUTot", "")
        nodes.append(
            SlurmNode(
                name=f["NodeName"],
                partitions=_split(f.get("Partitions")),
                gres=parse_gres(f.get("Gres", "")),
                features=_split(f.get("AvailableFeatures") or f.get("Features")),
                state=f.get("State", "UNKNOWN"),
                cpus=ascii_int(cpus),
                arch=f.get("Arch") if f.get("Arch") not in (None, "", "(null)", "N/A") else None,
            )
        )
    return tuple(nodes)


def _run(run: Runner, argv: Sequence[str], timeout: float = SLURM_TIMEOUT_S) -> str:
    res = run(argv, timeout)
    if res.returncode != 0:
        said = (res.stderr.strip() or res.stdout.strip() or "no output").splitlines()[-1]
        raise SchedulerError(
            f"`{shlex.join(argv)}` failed (exit {res.returncode}): {said}", hint=slurm_hint(argv[0])
        )
    return res.stdout


def read_nodes(run: Runner = run_command) -> tuple[SlurmNode, ...]:
    """The cluster's nodes. Raises SchedulerError (scontrol missing or the controller down)."""
    return parse_nodes(_run(run, ["scontrol", "show", "node", "--oneliner"]))


def default_partition(run: Runner = run_command) -> str | None:
    """The partition marked Default=YES, if any. Raises SchedulerError."""
    for line in _run(run, ["scontrol", "show", "partition", "--oneliner"]).splitlines():
        f = parse_fields(line)
        if f.get("Default") == "YES":
            return f.get("PartitionName")
    return None


def node_classes(nodes: Sequence[SlurmNode], matrix: Matrix) -> tuple[NodeClass, ...]:
    """Nodes grouped by what a GPU job sees: GPU GRES type and count, features, partitions. A class
    is named after its GRES type (h200), made unique with the GPU count or a number when two
    groups share it; nodes without GPU GRES form the class `cpu`. Unusable nodes are left out."""
    groups: dict[tuple[Any, ...], list[SlurmNode]] = {}
    for n in nodes:
        if not n.usable:
            continue
        gpus = n.gpus
        typ = gpus[0].type if gpus else None
        count = sum(g.count for g in gpus)
        groups.setdefault((typ, count, n.features, n.partitions, n.arch or ""), []).append(n)
    base = {key: (key[0] or ("gpu" if key[1] else "cpu")) for key in groups}
    classes = []
    for key, members in sorted(groups.items(), key=lambda kv: (base[kv[0]], kv[0][1], kv[0][2], kv[0][3])):
        typ, count, features, partitions, arch = key
        name = base[key]
        same = [k for k in groups if base[k] == name]
        if len(same) > 1:
            counts = [k[1] for k in same]
            name = f"{name}x{count}" if counts.count(count) == 1 else f"{name}-{same.index(key) + 1}"
        driver, cc, facts = facts_from_features(features)
        platform = platform_of_machine(arch) if arch else None
        if platform is not None:
            facts = [*facts, f"platform {platform}: Slurm Arch={arch}"]
        cls = NodeClass(
            name=name,
            scheduler="slurm",
            nodes=tuple(sorted(n.name for n in members)),
            gpus_per_node=count,
            gpu_type=typ,
            cc=cc,
            driver=driver,
            partitions=partitions,
            features=features,
            facts=tuple(facts),
            platform=platform,
        )
        if typ is not None:
            cls = with_gpu_model(cls, matrix, typ, "GRES type")
        classes.append(cls)
    return tuple(classes)


# --------------------------------------------------------------------------- a probe on a node


def probe_class(cls: NodeClass, run: Runner = run_command, partition: str | None = None) -> NodeClass:
    """Ask one node of the class what it has (`srun ... nvidia-smi`, host.probe's parser): its GPU
    name, compute capability and driver replace what the class guessed, with the probe as source.
    A probe that fails leaves the class as it was, the failure among its facts."""
    prefix = [
        "srun",
        "--nodes=1",
        f"--nodelist={cls.nodes[0]}",
        "--ntasks=1",
        "--time=5",
        "--job-name=envbuilder-probe",
    ]
    if partition or cls.partitions:
        prefix.append(f"--partition={partition or cls.partitions[0]}")
    if cls.gpus_per_node and cls.gpu_type:
        prefix.append(f"--gres=gpu:{cls.gpu_type}:1")
    elif cls.gpus_per_node:
        prefix.append("--gres=gpu:1")

    def on_node(argv: Sequence[str], timeout: float) -> Any:
        return run([*prefix, *argv], max(timeout, PROBE_TIMEOUT_S))

    report = probe_nvidia_smi(on_node)
    if not isinstance(report, HostReport) or not report.gpus:
        why = report if isinstance(report, str) else "nvidia-smi listed no GPU"
        return replace(cls, facts=(*cls.facts, f"probe on {cls.nodes[0]} failed: {why}"))
    gpu = report.gpus[0]
    facts = [
        f"probe on {cls.nodes[0]} (srun nvidia-smi): {gpu.name}, compute capability {gpu.cc}, "
        f"driver {report.driver}"
    ]
    driver = report.driver or ""
    try:
        parse_host_driver(driver)
    except UsageError:  # a blank or [N/A] cell: what the class assumed stands, and says why
        facts.append(
            f"probe on {cls.nodes[0]}: driver {quote_input(driver)} is no driver version; "
            f"the class's {cls.driver or 'unknown driver'} stands"
        )
        driver = ""
    return replace(
        cls,
        cc=gpu.cc or cls.cc,
        driver=driver or cls.driver,
        nvml_names=(gpu.name, *[n for n in cls.nvml_names if n != gpu.name]),
        facts=(*cls.facts, *facts),
    )


# --------------------------------------------------------------------------- jobs


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRequest:
    """What one certification job asks of Slurm (sbatch options, in its script's #SBATCH lines)."""

    name: str
    partition: str | None
    gres: str | None  # gpu:h200:2
    constraint: str | None  # sm_90&nvidia_driver_580.95.05
    exclusive: bool
    time_minutes: int
    output: str  # path of the job's stdout/stderr (%j: the job id)
    workdir: str

    def sbatch_options(self) -> list[str]:
        opts = [
            f"--job-name={self.name}",
            "--nodes=1",
            "--ntasks=1",
            f"--time={self.time_minutes}",
            f"--output={self.output}",
            f"--chdir={self.workdir}",
        ]
        if self.partition:
            opts.append(f"--partition={self.partition}")
        if self.gres:
            opts.append(f"--gres={self.gres}")
        if self.constraint:
            opts.append(f"--constraint={self.constraint}")
        if self.exclusive:
            opts.append("--exclusive")
        return opts


def class_request(cls: NodeClass) -> tuple[str | None, str | None]:
    """(--gres, --constraint) that select this class and nothing else: every GPU of a node (the
    certification measures the node as users get it) and every feature of the class."""
    gres = None
    if cls.gpus_per_node:
        gres = f"gpu:{cls.gpu_type}:{cls.gpus_per_node}" if cls.gpu_type else f"gpu:{cls.gpus_per_node}"
    constraint = "&".join(cls.features) or None
    return gres, constraint


def submit(script: str, run: Runner = run_command) -> str:
    """`sbatch --parsable SCRIPT` -> the job id. Raises SchedulerError naming Slurm's refusal."""
    out = _run(run, ["sbatch", "--parsable", script])
    job_id = out.strip().split(";")[0]
    if ascii_int(job_id) is None:
        raise SchedulerError(f"sbatch answered {out.strip()!r}, not a job id", hint=slurm_hint("sbatch"))
    return job_id


@dataclass(frozen=True, slots=True, kw_only=True)
class JobState:
    job_id: str
    state: str  # PENDING RUNNING COMPLETED FAILED CANCELLED TIMEOUT ... or UNKNOWN
    reason: str | None = None
    exit_code: str | None = None  # "0:0" (code:signal)
    node: str | None = None
    source: str = "scontrol"

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "state": self.state,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "node": self.node,
            "source": self.source,
        }


def job_state(job_id: str, run: Runner = run_command) -> JobState:
    """The job's state: `scontrol show job` while the controller remembers it (MinJobAge), else
    `sacct` (accounting), else UNKNOWN. Never raises."""
    res = run(["scontrol", "show", "job", job_id, "--oneliner"], SLURM_TIMEOUT_S)
    if res.returncode == 0:
        f = parse_fields(res.stdout.splitlines()[0] if res.stdout.strip() else "")
        if f.get("JobId") == job_id:
            node = f.get("NodeList")
            return JobState(
                job_id=job_id,
                state=f.get("JobState", "UNKNOWN"),
                reason=None if f.get("Reason") in (None, "None") else f.get("Reason"),
                exit_code=f.get("ExitCode"),
                node=None if node in (None, "(null)") else node,
            )
    acct = run(
        ["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,NodeList"], SLURM_TIMEOUT_S
    )
    for line in acct.stdout.splitlines() if acct.returncode == 0 else ():
        cells = line.split("|")
        if len(cells) == 4 and cells[0] == job_id:
            return JobState(
                job_id=job_id,
                state=cells[1].split()[0],
                exit_code=cells[2],
                node=cells[3] or None,
                source="sacct",
            )
    return JobState(
        job_id=job_id, state="UNKNOWN", reason="neither scontrol nor sacct knows the job", source="none"
    )


def cancel(job_ids: Sequence[str], run: Runner = run_command) -> None:
    """`scancel` the jobs (Ctrl-C during `fleet certify --wait`). Never raises."""
    if job_ids:
        run(["scancel", *job_ids], SLURM_TIMEOUT_S)
