"""Fleets: an image certified across a cluster's node classes and run there, through the cluster's
own scheduler (Slurm's sbatch/squeue/scontrol, Kubernetes Jobs), never a scheduler of ours.

schedulers/: the schedulers as plug-ins, one module per scheduler behind one Protocol (base.py)
and one registry (ALL_SCHEDULERS): what `fleet plan/build/certify/status/constraints` ask of each.
classes.py: a node class (GPU model, count, driver, features) and whether an image's stack covers
it. jobs.py: the fleet run record every scheduler keeps (its jobs, how a result is accepted and
sealed) and Slurm's batch job per class (the harness through the node's runtime). slurm.py:
Slurm's commands (node classes, jobs and their states). kubernetes.py, k8s_jobs.py, k8s_api.py:
node classes from GPU Feature Discovery labels, the Jobs that certify on them, and the cluster's
API. status.py: the newest certificate per class. certify.py: a run's certificates signed and
attached. bake.py, one_image.py: `fleet build` through `docker buildx bake`.
"""
