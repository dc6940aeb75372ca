"""eqdev.processes.stop: a child asked to stop gets its grace period, then is killed."""

from __future__ import annotations

import signal
import subprocess
import sys

from eqdev.processes import stop

IGNORES_TERM = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


def test_a_child_that_stops_on_sigterm_ends_with_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop(child, grace=10)
    assert child.returncode == -signal.SIGTERM


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    child = subprocess.Popen([sys.executable, "-c", IGNORES_TERM], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    stop(child, grace=0.2)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
