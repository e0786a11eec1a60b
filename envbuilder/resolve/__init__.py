"""The resolver stage: (matrix, request, host) -> the best stack and why (resolver.py), over
the GPU and driver facts it asks the matrix (gpus.py, drivers.py); its output types (model.py).
"""
