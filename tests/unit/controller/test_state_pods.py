"""ControllerState and pods: raw bodies in, engine updated, the loops of their trees woken.

Rules (controller/state.py): every pod change updates the engine; a pod change wakes the loops of
the trees it touched, and only those (``tree_wakes``: the tree it counted in before and the one it
counts in now), not the reconciler's dispatcher nor the profile controller; a broken pod is reported
through ``problems()`` until it is fixed or deleted; pods of ignored namespaces are not accounted.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from state_probes import CPU, clear_events, refs

from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings

if TYPE_CHECKING:
    from conftest import Bodies


def tree_loops(state: ControllerState, *trees: str) -> dict[str, asyncio.Event]:
    """The wake-ups of running loops of these trees, as the reconciler registers them once it
    has brought the topology up to date."""
    state.engine.tree_ids()
    for tree_id in trees:
        state.tree_wakes[tree_id] = asyncio.Event()
    return state.tree_wakes


def woken(state: ControllerState) -> set[str]:
    """The trees whose loops were woken (since the last ``clear_events``)."""
    return {tree_id for tree_id, wake in state.tree_wakes.items() if wake.is_set()}


def test_a_pod_is_accounted_to_its_quota(state: ControllerState, k8s: Bodies) -> None:
    state.on_node(k8s.node("n1"))
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    tree_loops(state, keys.DEFAULT_TREE)
    clear_events(state)

    state.on_pod(k8s.pod("p", quota="a", requests={CPU: "1"}, node="n1", phase="Running"))

    result = state.engine.solve_tree(keys.DEFAULT_TREE)["a"]
    assert (result.request[CPU], result.used[CPU]) == (1000, 1000)
    assert woken(state) == {keys.DEFAULT_TREE}
    assert not state.trees_changed.is_set()  # no dispatcher between a pod event and its loop
    assert not state.profiles_changed.is_set()


def test_a_deleted_pod_is_no_longer_accounted(state: ControllerState, k8s: Bodies) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    pod = k8s.pod("p", quota="a", requests={CPU: "1"})
    state.on_pod(pod)
    tree_loops(state, keys.DEFAULT_TREE)
    clear_events(state)

    state.on_pod_deleted(pod)

    assert state.engine.solve_tree(keys.DEFAULT_TREE)["a"].request[CPU] == 0
    assert woken(state) == {keys.DEFAULT_TREE}


@pytest.fixture
def two_trees(state: ControllerState, k8s: Bodies) -> ControllerState:
    """Quota ``a`` in the default tree, ``pool`` in tree 7, a running loop for each tree."""
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_quota(k8s.quota("pool", max={CPU: "4"}, labels={keys.LABEL_TREE_ID: "7"}))
    tree_loops(state, keys.DEFAULT_TREE, "7")
    clear_events(state)
    return state


def test_a_pod_event_wakes_only_the_loop_of_its_tree(
    two_trees: ControllerState, k8s: Bodies
) -> None:
    state = two_trees
    pod = k8s.pod("p", quota="pool", requests={CPU: "1"})
    state.on_pod(pod)
    assert woken(state) == {"7"}

    clear_events(state)
    state.on_pod(pod)  # delivered again, unchanged: nothing to wake
    assert woken(state) == set()

    state.on_pod_deleted(pod)
    assert woken(state) == {"7"}
    assert not state.trees_changed.is_set()


def test_a_pod_that_moves_to_another_tree_wakes_both(
    two_trees: ControllerState, k8s: Bodies
) -> None:
    state = two_trees
    state.on_pod(k8s.pod("p", quota="pool", requests={CPU: "1"}))
    clear_events(state)

    state.on_pod(k8s.pod("p", quota="a", requests={CPU: "1"}))  # relabelled

    assert woken(state) == {keys.DEFAULT_TREE, "7"}
    assert state.engine.solve_tree("7")["pool"].request[CPU] == 0


def test_a_pod_event_while_the_trees_await_their_rebuild_wakes_none(
    two_trees: ControllerState, k8s: Bodies
) -> None:
    """A quota change made the topology stale: the pod is only noted, and the dispatcher, woken
    by that quota change, rebuilds the trees and wakes them all."""
    state = two_trees
    state.on_quota(k8s.quota("b", max={CPU: "4"}))
    clear_events(state)
    state.on_pod(k8s.pod("p", quota="pool", requests={CPU: "1"}))
    assert woken(state) == set()
    assert state.engine.solve_tree("7")["pool"].request[CPU] == 1000  # placed by the rebuild


def test_pods_of_ignored_namespaces_are_not_accounted(k8s: Bodies) -> None:
    state = ControllerState.create(EngineSettings(), frozenset({"kube-system"}))
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_pod(k8s.pod("p", "kube-system", quota="a", requests={CPU: "1"}))
    state.on_pod(k8s.pod("q", "team", quota="a", requests={CPU: "2"}))

    assert set(state.engine.pods) == {"team/q"}
    assert state.engine.solve_tree(keys.DEFAULT_TREE)["a"].request[CPU] == 2000


def test_a_broken_pod_is_reported_until_fixed(state: ControllerState, k8s: Bodies) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_pod(k8s.pod("p", quota="a", requests={CPU: "a lot"}))
    assert "Pod team/p" in refs(state)
    assert "team/p" not in state.engine.pods

    state.on_pod(k8s.pod("p", quota="a", requests={CPU: "1"}))
    assert "Pod team/p" not in refs(state)
    assert state.engine.solve_tree(keys.DEFAULT_TREE)["a"].request[CPU] == 1000


def test_a_deleted_broken_pod_is_no_longer_reported(state: ControllerState, k8s: Bodies) -> None:
    pod = k8s.pod("p", requests={CPU: "a lot"})
    state.on_pod(pod)
    state.on_pod_deleted(pod)
    assert "Pod team/p" not in refs(state)
