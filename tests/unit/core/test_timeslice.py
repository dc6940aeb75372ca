"""Synchronous work is due to yield once it ran for its budget (core/generic/timeslice.py)."""

from __future__ import annotations

from elasticquota.core.generic.timeslice import TimeSlice


def test_a_stretch_is_due_after_its_budget_and_restarts() -> None:
    now = [10.0]
    stretch = TimeSlice(0.02, clock=lambda: now[0])
    now[0] = 10.01
    assert not stretch.due()
    now[0] = 10.03
    assert stretch.due()
    stretch.restart()
    assert not stretch.due()
    now[0] = 10.05
    assert stretch.due()
