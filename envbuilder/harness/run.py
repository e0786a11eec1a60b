"""File-path entry: `python3 /opt/envbuilder/envbuilder_harness/run.py [options]`.

Puts the folder above this package on sys.path and imports the package by its folder name, so
the payload works under whatever name it was copied as, without PYTHONPATH.
"""

import importlib
import sys
from pathlib import Path

if __name__ == "__main__":
    _here = Path(__file__).resolve().parent
    sys.path.insert(0, str(_here.parent))
    _cli = importlib.import_module(f"{_here.name}.cli")
    sys.exit(_cli.main())
