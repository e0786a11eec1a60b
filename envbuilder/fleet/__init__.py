"""Fleets: an image certified across a cluster's node classes and run there, through the cluster's
own scheduler (Slurm's sbatch/squeue/scontrol, Kubernetes Jobs), never a scheduler of ours.

classes.py: a node class (GPU model, count, driver, features) and whether an image's stack covers
it. slurm.py: Slurm's node classes, jobs and their states. kubernetes.py: node classes from GPU
Feature Discovery labels and the Jobs that certify on them. jobs.py: the certification job of one
class (the harness through the node's runtime) and the fleet run that collects and signs what the
jobs left. constraints.py: what a certified image asks of a scheduler (Slurm, Kubernetes node
affinity, NFD's image-compatibility artifact). bake.py: `fleet build` through `docker buildx bake`.
"""
