"""The multi_gpu step (step.py): one worker process per GPU (worker.py, run as
`python -m <package>.multigpu.worker`), their JSON merged (merge.py), and the environment rules
that explain hangs (env.py; `envbuilder doctor` applies the same ones on the host)."""
