"""The report stage: a certificate shown in the terminal and as self-contained HTML
(report.py, charts.py, timeline.py, multigpu.py) and two of them side by side (compare.py).
"""
