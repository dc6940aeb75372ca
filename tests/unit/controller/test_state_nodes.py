"""ControllerState and nodes: raw bodies in, the engine's total updated, the right loops signalled.

Rules (controller/state.py): every node change updates the engine and wakes the reconciler's
dispatcher (``trees_changed``) and the profile controller (``profiles_changed``); a broken node is
not counted and is reported through ``problems()`` until it is fixed or deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state_probes import CPU, clear_events, refs

from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import Bodies


def test_a_node_adds_to_the_default_tree_total(state: ControllerState, k8s: Bodies) -> None:
    state.on_node(k8s.node("n1", allocatable={CPU: "8"}))
    state.on_node(k8s.node("n2", allocatable={CPU: "4"}))

    assert state.engine.solve_tree(keys.DEFAULT_TREE)[keys.ROOT_QUOTA].runtime[CPU] == 12000
    assert state.trees_changed.is_set() and state.profiles_changed.is_set()


def test_a_changed_node_replaces_its_old_allocatable(state: ControllerState, k8s: Bodies) -> None:
    state.on_node(k8s.node("n1", allocatable={CPU: "8"}))
    state.on_node(k8s.node("n1", allocatable={CPU: "2"}))
    assert state.engine.solve_tree(keys.DEFAULT_TREE)[keys.ROOT_QUOTA].runtime[CPU] == 2000


def test_a_deleted_node_leaves_the_total(state: ControllerState, k8s: Bodies) -> None:
    state.on_node(k8s.node("n1", allocatable={CPU: "8"}))
    state.on_node(k8s.node("n2", allocatable={CPU: "4"}))
    clear_events(state)

    state.on_node_deleted(k8s.node("n1"))

    assert state.engine.solve_tree(keys.DEFAULT_TREE)[keys.ROOT_QUOTA].runtime[CPU] == 4000
    assert set(state.engine.nodes) == {"n2"}
    assert state.trees_changed.is_set() and state.profiles_changed.is_set()


def test_a_broken_node_is_not_counted_and_reported(state: ControllerState, k8s: Bodies) -> None:
    state.on_node(k8s.node("n1", allocatable={CPU: "8"}))
    state.on_node(k8s.node("n1", allocatable={CPU: "eight"}))

    assert "n1" not in state.engine.nodes
    assert "Node /n1" in refs(state)


def test_a_deleted_broken_node_is_no_longer_reported(state: ControllerState, k8s: Bodies) -> None:
    body = k8s.node("n1", allocatable={CPU: "eight"})
    state.on_node(body)
    state.on_node_deleted(body)
    assert "Node /n1" not in refs(state)
