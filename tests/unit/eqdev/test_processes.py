"""eqdev.processes: a child asked to stop gets its grace period, then is killed; the end of a
child's log says what is there, or that there is none."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from eqdev.processes import log_tail, stop

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


def test_the_log_tail_is_the_last_lines_of_the_log(tmp_path: Path) -> None:
    log = tmp_path / "etcd.log"
    log.write_text("".join(f"line {n}\n" for n in range(10)))
    assert log_tail(log, 3) == "line 7\nline 8\nline 9"


def test_the_log_tail_says_when_the_log_is_empty_or_missing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert log_tail(empty, 3) == "(empty log)"
    assert log_tail(tmp_path / "never-written.log", 3) == "(no log)"
