"""The PyTorch workloads: ResNet-18/50 (models.py), the synthetic set rendered on the device
(data.py), the training loop (train.py), the DataLoader pipeline (loader.py) and loader-fed
training (feed.py). Each module imports torch at the top: import them only where torch is."""
