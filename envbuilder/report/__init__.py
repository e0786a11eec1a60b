"""The report stage: a certificate as a Report (model.py), shown in the terminal (terminal.py) and
as self-contained HTML (html.py, with SVG from charts.py, timeline.py, multigpu.py), and two of
them side by side (compare.py).
"""
