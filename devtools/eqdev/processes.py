"""Child processes of the development tooling, stopped the same way everywhere."""

from __future__ import annotations

import subprocess
from typing import Any


def stop(process: subprocess.Popen[Any], grace: float) -> None:
    """Ask ``process`` to stop (SIGTERM), give it ``grace`` seconds, then kill it; wait for it."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
