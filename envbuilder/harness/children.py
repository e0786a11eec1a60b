"""What every child process of the harness does (multi_gpu ranks, compile-lane children): exit when
the harness that started it dies, so none is ever left holding a GPU."""

from __future__ import annotations

import os
import threading
import time


def exit_with_parent(code: int = 70) -> None:
    """Start a daemon thread that exits this process once its parent is gone."""
    parent = os.getppid()

    def guard() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(code)

    threading.Thread(target=guard, name="exit-with-parent", daemon=True).start()
