"""What the steps measure: per framework, the models, the seeded synthetic data and the training
loops (pytorch/); framework-free pieces beside them (run configuration, step statistics, the
learning checks, the batch search)."""
