"""ControllerState: raw bodies in, engine and objects updated, the right loops signalled.

Rules (controller/state.py): every quota, pod and node change updates the engine; a pod change
wakes the loops of the trees it touched, and only those (``tree_wakes``: the tree it counted in
before and the one it counts in now), quota and node changes the reconciler's dispatcher
(``trees_changed``); node, profile and root-quota changes wake the profile controller
(``profiles_changed``); broken objects are reported through ``problems()`` until they are fixed or
deleted; ``synced`` is set once, by ``mark_synced``; pods of ignored namespaces are not accounted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from elasticquota.api.parse import QuotaParse, parse_quota_object
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings

if TYPE_CHECKING:
    from conftest import Bodies

CPU = "cpu"


def solved(state: ControllerState, tree: str = keys.DEFAULT_TREE) -> dict[str, object]:
    return dict(state.engine.solve_tree(tree))


def refs(state: ControllerState) -> set[str]:
    return {problem.object for problem in state.problems()}


def clear_events(state: ControllerState) -> None:
    state.trees_changed.clear()
    state.profiles_changed.clear()
    for wake in state.tree_wakes.values():
        wake.clear()


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


# -- quotas ---------------------------------------------------------------------------------------


def test_a_quota_is_kept_as_last_seen_and_given_to_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    body = k8s.quota(
        "a",
        min={CPU: "1"},
        max={CPU: "4"},
        annotations={"note": "x"},
        status={"used": {CPU: "2"}},
    )
    state.on_quota(body)

    seen = state.quotas[("team", "a")]
    assert (seen.uid, seen.annotations, seen.status) == (
        "uid-team-a",
        {"note": "x"},
        body["status"],
    )
    assert seen.spec == {"min": {CPU: "1"}, "max": {CPU: "4"}}
    assert seen.involved() == {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "namespace": "team",
        "name": "a",
        "uid": "uid-team-a",
    }
    assert "a" in solved(state)


def test_a_quota_change_wakes_the_tree_loops_but_not_the_profile_controller(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    assert state.trees_changed.is_set()
    assert not state.profiles_changed.is_set()


def test_an_unchanged_quota_still_wakes_the_tree_loops(state: ControllerState, k8s: Bodies) -> None:
    """Our own writes echo back with the same spec: the loops must diff them (and write nothing)."""
    body = k8s.quota("a", max={CPU: "4"})
    state.on_quota(body)
    clear_events(state)
    state.on_quota(body)
    assert state.trees_changed.is_set()


class ParseRecorder:
    """``parse_quota_object`` that notes every body it is given."""

    def __init__(self) -> None:
        self.bodies: list[Mapping[str, Any]] = []

    def __call__(self, body: Mapping[str, Any]) -> QuotaParse:
        self.bodies.append(body)
        return parse_quota_object(body)


def test_an_echo_of_our_own_write_is_not_parsed_again(k8s: Bodies) -> None:
    """Thousands of our writes echo back per second in a burst: only what they changed (the
    result annotations, the status) differs, so the spec the engine holds is kept as is."""
    parsed = ParseRecorder()
    state = ControllerState.create(EngineSettings(), quota_parser=parsed)
    state.on_quota(
        k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}'})
    )
    assert len(parsed.bodies) == 1
    parsed.bodies.clear()
    echo = k8s.quota(
        "a",
        max={CPU: "4"},
        annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}', keys.ANNO_REQUEST: '{"cpu":"1"}'},
        status={"used": {CPU: "1"}},
    )
    clear_events(state)
    state.on_quota(echo)
    assert parsed.bodies == []
    assert state.trees_changed.is_set()
    kept = state.quotas[("team", "a")]
    assert kept.annotations[keys.ANNO_REQUEST] == '{"cpu":"1"}' and kept.status == echo["status"]
    assert kept == state.parsed[("team", "a")]  # the same reading, with the echo's sections
    assert kept.shared_weight == {CPU: 1000}
    assert "a" in solved(state)


def test_the_watch_echo_of_a_kept_write_keeps_the_kept_quota(k8s: Bodies) -> None:
    """Each write echoes twice: the patch's answer (kept) and the watch. The second shows what
    the first did, so memory keeps that very object; an echo showing other figures replaces it."""
    parsed = ParseRecorder()
    state = ControllerState.create(EngineSettings(), quota_parser=parsed)
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    written = k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_REQUEST: '{"cpu":"1"}'})
    state.keep_written(written)
    kept = state.quotas[("team", "a")]
    state.on_quota(written)  # the watch
    assert state.quotas[("team", "a")] is kept
    later = k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_REQUEST: '{"cpu":"2"}'})
    state.on_quota(later)
    assert state.quotas[("team", "a")].annotations[keys.ANNO_REQUEST] == '{"cpu":"2"}'
    assert len(parsed.bodies) == 1


def test_what_a_write_returns_is_kept_for_the_diff_and_taken_in_only_by_the_reader(
    state: ControllerState, k8s: Bodies
) -> None:
    """The write path never re-enters intake: the object a write returned is what the next diff
    reads, but nothing is parsed or woken until the watch brings it to ``on_quota``, which parses
    it since its inputs differ from those the engine holds."""
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    before = solved(state)["a"]
    assert state.take_changed_quotas() == {"a"}
    clear_events(state)
    written = k8s.quota("a", max={CPU: "8"})
    state.keep_written(written)
    assert state.quotas[("team", "a")].spec["max"] == {CPU: "8"}
    assert not state.trees_changed.is_set() and not state.profiles_changed.is_set()
    assert state.take_changed_quotas() == set()
    assert solved(state)["a"] == before  # the engine still holds what the reader gave it
    state.keep_written(None)  # a dry run sent nothing
    state.on_quota(written)  # the watch
    assert state.trees_changed.is_set() and state.take_changed_quotas() == {"a"}
    assert solved(state)["a"] != before


@pytest.mark.parametrize(
    "change",
    [
        {"max": {CPU: "5"}},
        {"labels": {keys.LABEL_ALLOW_LENT: "false"}},
        {"annotations": {keys.ANNO_SHARED_WEIGHT: '{"cpu":"2"}'}},
        {"annotations": {}},  # an input annotation removed
        {"annotations": {keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}', "note": "x"}},  # one added
    ],
)
def test_a_change_of_what_the_spec_is_read_from_is_parsed(
    k8s: Bodies, change: dict[str, dict[str, str]]
) -> None:
    base: dict[str, dict[str, str]] = {
        "max": {CPU: "4"},
        "labels": {},
        "annotations": {keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}'},
    }
    parsed = ParseRecorder()
    state = ControllerState.create(EngineSettings(), quota_parser=parsed)
    state.on_quota(k8s.quota("a", **base))  # type: ignore[arg-type]
    state.on_quota(k8s.quota("a", **{**base, **change}))  # type: ignore[arg-type]
    assert len(parsed.bodies) == 2


def test_a_root_quota_change_wakes_the_profile_controller(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("pool-root", labels={keys.LABEL_IS_ROOT: "true"}))
    assert state.profiles_changed.is_set()


def test_an_unusable_quota_is_kept_for_events_but_left_out_of_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("bad", min={CPU: "8"}, max={CPU: "4"}))

    assert ("team", "bad") in state.quotas
    assert "bad" not in solved(state)
    messages = [p.message for p in state.problems() if p.object == "ElasticQuota team/bad"]
    assert any("greater than" in message for message in messages)


def test_a_fixed_quota_loses_its_problem_and_joins_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("bad", min={CPU: "8"}, max={CPU: "4"}))
    state.on_quota(k8s.quota("bad", min={CPU: "2"}, max={CPU: "4"}))

    assert "ElasticQuota team/bad" not in refs(state)
    assert "bad" in solved(state)


def test_a_quota_that_became_unusable_leaves_the_engine(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_quota(k8s.quota("a", max={CPU: "lots"}))
    assert "a" not in solved(state)


def test_a_deleted_quota_is_forgotten_with_its_problems(
    state: ControllerState, k8s: Bodies
) -> None:
    body = k8s.quota("bad", min={CPU: "8"}, max={CPU: "4"})
    state.on_quota(body)
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    clear_events(state)

    state.on_quota_deleted(k8s.quota("a"))
    state.on_quota_deleted(body)

    assert state.quotas == {}
    assert "a" not in solved(state)
    assert "ElasticQuota team/bad" not in refs(state)
    assert state.trees_changed.is_set() and state.profiles_changed.is_set()


# -- pods -----------------------------------------------------------------------------------------


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


# -- nodes ----------------------------------------------------------------------------------------


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


# -- profiles -------------------------------------------------------------------------------------


def test_a_profile_is_kept_with_its_labels(state: ControllerState, k8s: Bodies) -> None:
    body = k8s.profile(
        "gpu",
        quota_name="gpu-root",
        match_labels={"pool": "gpu"},
        labels={keys.LABEL_TREE_ID: "42"},
    )
    state.on_profile(body)

    profile = state.profiles[("team", "gpu")]
    assert (profile.quota_name, profile.match_labels) == ("gpu-root", {"pool": "gpu"})
    assert state.profile_labels[("team", "gpu")] == {keys.LABEL_TREE_ID: "42"}
    assert state.profiles_changed.is_set()
    assert not state.trees_changed.is_set()


def test_a_deleted_profile_is_forgotten(state: ControllerState, k8s: Bodies) -> None:
    body = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    state.on_profile(body)
    state.profiles_changed.clear()

    state.on_profile_deleted(body)

    assert state.profiles == {} and state.profile_labels == {}
    assert state.profiles_changed.is_set()


def test_a_broken_profile_is_dropped_and_reported(state: ControllerState, k8s: Bodies) -> None:
    good = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    state.on_profile(good)
    broken = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    del broken["spec"]["quotaName"]

    state.on_profile(broken)

    assert ("team", "gpu") not in state.profiles
    assert "ElasticQuotaProfile team/gpu" in refs(state)


def test_a_deleted_broken_profile_is_no_longer_reported(
    state: ControllerState, k8s: Bodies
) -> None:
    broken = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    del broken["spec"]["nodeSelector"]
    state.on_profile(broken)
    state.on_profile_deleted(broken)
    assert "ElasticQuotaProfile team/gpu" not in refs(state)


# -- sync and problems ----------------------------------------------------------------------------


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


def test_the_texts_of_written_quotas_are_shared_between_them(
    state: ControllerState, k8s: Bodies
) -> None:
    """10,000 written quotas have a thousand distinct figure lists between them: the JSON texts
    their echoes bring are kept once, not once per quota."""
    for name in ("a", "b"):
        state.on_quota(k8s.quota(name, max={CPU: "4"}))
        body = k8s.quota(name, max={CPU: "4"}, annotations={keys.ANNO_REQUEST: '{"cpu":"1"}'})
        body["status"] = {"used": {CPU: "1500m"}}
        state.keep_written(json.loads(json.dumps(body)))  # texts of their own, as parsed
    a, b = state.quotas[("team", "a")], state.quotas[("team", "b")]
    assert a.annotations[keys.ANNO_REQUEST] == '{"cpu":"1"}'
    assert a.annotations[keys.ANNO_REQUEST] is b.annotations[keys.ANNO_REQUEST]
    assert a.status["used"][CPU] is b.status["used"][CPU]
