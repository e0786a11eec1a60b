"""The certify stage: run the harness in the image with GPU access (gpu_access.py, certify.py),
seal the result (certificate.py) and keep it (store.py).
"""
