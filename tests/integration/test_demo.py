"""`make run` (``elastic-quota demo``): the examples live on a local control plane, then a clean
stop.

The demo starts its own control plane (the session's binaries are cached by then), the operator in
simulation mode, applies ``examples/`` and draws the live tree; with ``--seconds`` it stops by
itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_the_demo_shows_the_live_tree_of_the_examples_and_stops_cleanly() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "elasticquota", "demo", "--seconds", "12", "--interval", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    last_frame = finished.stdout.rsplit("SIMULATION:", 1)[-1]
    assert "ml-research" in last_frame
    assert "tree 15138299097917482161" in last_frame  # the GPU profile's tree, live
    assert "stopped the operator and the local control plane" in finished.stdout
