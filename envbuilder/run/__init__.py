"""The run stage: check a certificate against this host (coverage.py), start the training
container (launch.py), and watch it (monitor.py, diagnosis.py).
"""
