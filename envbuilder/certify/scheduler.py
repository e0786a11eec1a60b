"""Where a certification ran when a cluster's scheduler started it: the Slurm job or Kubernetes pod
the harness ran in, and the node class the fleet asked for. It goes into the certificate's `run`
section as `scheduler`, sealed and signed with the rest, so a fleet's certificates say which class
each one covers (envbuilder/fleet/ reads it back).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

NODE_CLASS_ENV = "ENVBUILDER_NODE_CLASS"  # set by the fleet's job script / Job manifest
FLEET_RUN_ENV = "ENVBUILDER_FLEET_RUN"  # the fleet run that submitted the job
SLURM_GRES_ENV = "ENVBUILDER_SLURM_GRES"  # the --gres that selected the class
SLURM_CONSTRAINT_ENV = "ENVBUILDER_SLURM_CONSTRAINT"  # the --constraint that selected it
# The scheduler's own variables, as each states them inside a job.
_SLURM = {
    "SLURM_JOB_ID": "job_id",
    "SLURMD_NODENAME": "node",
    "SLURM_JOB_PARTITION": "partition",
    "SLURM_JOB_GPUS": "gpus",
    "SLURM_CLUSTER_NAME": "cluster",
}
# Kubernetes has no such variables: the Job manifest hands these in through the downward API.
_KUBERNETES = {
    "ENVBUILDER_K8S_NODE": "node",
    "ENVBUILDER_K8S_POD": "pod",
    "ENVBUILDER_K8S_NAMESPACE": "namespace",
    "ENVBUILDER_K8S_JOB": "job",
}


def scheduler_record(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The scheduler context in `env`: {kind: slurm|kubernetes, job_id/pod, node, ..., class,
    fleet_run}, or None outside a scheduler's job."""
    for kind, keys in (("slurm", _SLURM), ("kubernetes", _KUBERNETES)):
        found = {name: env[k] for k, name in keys.items() if env.get(k)}
        if found:
            rec: dict[str, Any] = {"kind": kind, **found}
            ours = (
                (NODE_CLASS_ENV, "class"),
                (FLEET_RUN_ENV, "fleet_run"),
                (SLURM_GRES_ENV, "gres"),
                (SLURM_CONSTRAINT_ENV, "constraint"),
            )
            for key, name in ours:
                if env.get(key):
                    rec[name] = env[key]
            return rec
    return None


def scheduler_section(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """{"scheduler": record} for a certificate's run section, or {} outside a scheduler's job."""
    rec = scheduler_record(os.environ if env is None else env)
    return {"scheduler": rec} if rec else {}
