"""Where a certification ran when a cluster's scheduler started it: the Slurm job or Kubernetes pod
the harness ran in, and the node class the fleet asked for. It goes into the certificate's `run`
section as `scheduler`, sealed and signed with the rest, so a fleet's certificates say which class
each one covers (envbuilder/fleet/ reads it back).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NODE_CLASS_ENV = "ENVBUILDER_NODE_CLASS"  # set by the fleet's job script / Job manifest
FLEET_RUN_ENV = "ENVBUILDER_FLEET_RUN"  # the fleet run that submitted the job
SLURM_GRES_ENV = "ENVBUILDER_SLURM_GRES"  # the --gres that selected the class
SLURM_CONSTRAINT_ENV = "ENVBUILDER_SLURM_CONSTRAINT"  # the --constraint that selected it
FLEET_VARIABLES = {NODE_CLASS_ENV: "class", FLEET_RUN_ENV: "fleet_run"}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobVariables:
    """What a job of one scheduler carries in its environment: the scheduler's own variables (any
    one of them says the process runs in such a job) and those the fleet's job hands in for it,
    each with the record field it becomes."""

    kind: str  # the scheduler's name (fleet/schedulers/: Scheduler.name)
    own: Mapping[str, str]
    fleet: Mapping[str, str] = field(default_factory=dict)


# One entry per scheduler whose jobs run `envbuilder certify` on the node (a scheduler whose jobs
# run the harness directly has its results sealed on the submitting host and needs none).
JOB_VARIABLES = (
    JobVariables(
        kind="slurm",
        own={
            "SLURM_JOB_ID": "job_id",
            "SLURMD_NODENAME": "node",
            "SLURM_JOB_PARTITION": "partition",
            "SLURM_JOB_GPUS": "gpus",
            "SLURM_CLUSTER_NAME": "cluster",
        },
        fleet={SLURM_GRES_ENV: "gres", SLURM_CONSTRAINT_ENV: "constraint"},
    ),
    # Kubernetes has no such variables: the Job manifest hands these in through the downward API.
    JobVariables(
        kind="kubernetes",
        own={
            "ENVBUILDER_K8S_NODE": "node",
            "ENVBUILDER_K8S_POD": "pod",
            "ENVBUILDER_K8S_NAMESPACE": "namespace",
            "ENVBUILDER_K8S_JOB": "job",
        },
    ),
)


def scheduler_record(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The scheduler context in `env`: {kind: slurm|kubernetes, job_id/pod, node, ..., class,
    fleet_run}, or None outside a scheduler's job."""
    for job in JOB_VARIABLES:
        found = {name: env[k] for k, name in job.own.items() if env.get(k)}
        if found:
            rec: dict[str, Any] = {"kind": job.kind, **found}
            for key, name in {**FLEET_VARIABLES, **job.fleet}.items():
                if env.get(key):
                    rec[name] = env[key]
            return rec
    return None


def scheduler_section(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """{"scheduler": record} for a certificate's run section, or {} outside a scheduler's job."""
    rec = scheduler_record(os.environ if env is None else env)
    return {"scheduler": rec} if rec else {}
