"""The certification steps: each records one Step (record.py) from a Session (session.py) and what
earlier steps handed it; plan.py decides which run, in what order. The models, data and training
loops they measure live in workloads/, the multi-GPU step in multigpu/."""
