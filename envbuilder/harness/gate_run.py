"""File-path entry of the check's short mode: `python3 HARNESS/gate_run.py [options]` (gate.py).

As run.py: puts the folder above this package on sys.path and imports the package by its folder
name, so the payload works under whatever name it was copied as.
"""

import importlib
import sys
from pathlib import Path

if __name__ == "__main__":
    _here = Path(__file__).resolve().parent
    sys.path.insert(0, str(_here.parent))
    _gate = importlib.import_module(f"{_here.name}.gate")
    sys.exit(_gate.main())
