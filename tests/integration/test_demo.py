"""`make run` (``python -m eqdev.demo``): the examples live on a local control plane, then a clean
stop.

Each run starts its own control plane (the binaries are cached by then) and the operator in
simulation mode. The story's timeline, sped up (revocation delay 5 s, the turn after 3 s): the
borrowers run, ``analytics`` asks for its min, ``ml-research``'s runtime shrinks, its least
important pods are evicted and, after their 10-s grace period, removed by the simulated kubelet so
they stop counting in ``used``; ``analytics``' pods are bound as they fit. ``--no-story`` shows
the plain live view. Ctrl-C ends the demo cleanly at any moment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elasticquota.cli.tree_command import CLEAR_SCREEN

ROOT = Path(__file__).resolve().parents[2]
DEMO = [sys.executable, "-m", "eqdev.demo"]
#: The development tooling's source root on the demo's path, as ``make run`` puts it.
ENVIRONMENT = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT / "devtools"), os.environ.get("PYTHONPATH")])
    ),
}


def run_demo(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DEMO, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=ENVIRONMENT
    )


def last_frame(stdout: str) -> str:
    return stdout.rsplit(CLEAR_SCREEN, 1)[-1]


def row(frame: str, quota: str) -> str:
    """The first (cpu) row of a quota in the tree."""
    return next(line for line in frame.splitlines() if line.strip().startswith(f"{quota} "))


def first_frame_with(frames: list[str], text: str) -> int:
    """The index of the first frame that shows ``text`` (fails when none does)."""
    found = [index for index, frame in enumerate(frames) if text in frame]
    assert found, f"no frame shows {text!r}; the last one:\n{frames[-1]}"
    return found[0]


@pytest.mark.timeout(300)
def test_the_story_shows_reclaim_then_eviction_and_the_evicted_pods_leave_used() -> None:
    finished = run_demo(
        "--seconds", "45", "--interval", "2", "--revocation-delay", "5", "--story-pause", "3"
    )  # fmt: skip

    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "Traceback" not in finished.stdout + finished.stderr
    frames = finished.stdout.split(CLEAR_SCREEN)[1:]
    assert "Revocation delay: 5 s" in frames[0]
    # The pane tells the story in order: the turn, the shrink, the eviction, the removal.
    story = [
        "analytics asks for its min: created 3 pending pods",
        "runtime of ml-research shrinks",
        "ml-research is over its runtime",
        "Pod ml-research/train-5: evicted: quota ml-research is over its runtime",
        "Pod ml-research/train-5: SIMULATION: the containers stopped",
        "ml-research is back within its runtime",
    ]
    seen = [first_frame_with(frames, text) for text in story]
    assert seen == sorted(seen), list(zip(story, seen, strict=True))
    first_frame_with(frames, "Pod analytics/report-1: SIMULATION: fits quota analytics: bound")
    # At the end the evicted pods are gone: ml-research is within its runtime (no "!").
    last = frames[-1]
    assert "2. [done] analytics asks for its min" in last
    assert "3. [done] the operator raises its runtime" in last
    assert "4. [done] a borrower over its runtime for 5 s loses" in last
    assert "!" not in row(last, "ml-research"), last
    assert "stopped the operator and the local control plane" in finished.stdout


@pytest.mark.timeout(300)
def test_without_the_story_the_demo_shows_the_live_tree_of_the_examples() -> None:
    finished = run_demo("--no-story", "--seconds", "10", "--interval", "3")

    assert finished.returncode == 0, finished.stderr[-3000:]
    frame = last_frame(finished.stdout)
    assert "ml-research" in frame
    assert "Story:" not in frame
    assert "tree gpu-pool (id 1513…" in frame  # the GPU profile's tree, live
    assert "stopped the operator and the local control plane" in finished.stdout


@pytest.mark.timeout(300)
def test_ctrl_c_ends_the_demo_cleanly() -> None:
    demo = subprocess.Popen(
        DEMO, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENVIRONMENT
    )
    assert demo.stdout is not None
    output = ""
    deadline = time.monotonic() + 200
    while "Recent events" not in output and time.monotonic() < deadline:
        line = demo.stdout.readline()
        if not line:
            break
        output += line
    assert "Recent events" in output, output
    demo.send_signal(signal.SIGINT)
    rest, errors = demo.communicate(timeout=60)

    assert demo.returncode == 0, errors[-3000:]
    assert "Traceback" not in rest + errors and "InvalidStateError" not in rest + errors
    assert "stopped the operator and the local control plane" in rest
