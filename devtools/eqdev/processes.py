"""Child processes of the development tooling, stopped the same way everywhere, and the end of
their log files for the error that says why one failed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def stop(process: subprocess.Popen[Any], grace: float) -> None:
    """Ask ``process`` to stop (SIGTERM), give it ``grace`` seconds, then kill it; wait for it."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def log_tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a child's log file: ``(no log)`` when it cannot be read,
    ``(empty log)`` when it holds nothing."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"
