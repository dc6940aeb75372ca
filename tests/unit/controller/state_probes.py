"""What the ControllerState tests read off the memory and reset: the objects it reports problems
of, and the events that wake its loops.

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

from elasticquota.controller.state import ControllerState

CPU = "cpu"


def refs(state: ControllerState) -> set[str]:
    return {problem.object for problem in state.problems()}


def clear_events(state: ControllerState) -> None:
    state.trees_changed.clear()
    state.profiles_changed.clear()
    for wake in state.tree_wakes.values():
        wake.clear()
