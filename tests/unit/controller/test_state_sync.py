"""ControllerState once listed, and its problems.

Rules (controller/state.py): ``synced`` is set once, by ``mark_synced``, which wakes every loop;
``problems()`` reports the engine's structural problems as well as the broken objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state_probes import CPU, clear_events

from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import Bodies


def test_mark_synced_sets_synced_once_and_wakes_every_loop(state: ControllerState) -> None:
    assert not state.synced.is_set()
    state.mark_synced()
    assert state.synced.is_set()
    assert state.trees_changed.is_set() and state.profiles_changed.is_set()

    clear_events(state)
    state.mark_synced()  # the sentinel fires on every namespace event: only the first one counts
    assert not state.trees_changed.is_set() and not state.profiles_changed.is_set()


def test_problems_include_the_engines_structural_ones(state: ControllerState, k8s: Bodies) -> None:
    """A tree without a root quota carrying its total is a problem of the engine, not of parsing."""
    state.on_quota(k8s.quota("orphan", max={CPU: "4"}, labels={keys.LABEL_TREE_ID: "7"}))
    assert state.parse_problems == {}
    assert any("has no root quota" in p.message for p in state.problems())
