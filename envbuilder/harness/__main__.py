"""`python3 -m envbuilder_harness` (in images) or `python3 -m envbuilder.harness` (in the repo)."""

import sys

from .cli import main

sys.exit(main())
