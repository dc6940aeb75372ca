"""The engine's incremental outputs: what changed is exactly what differs, snapshots never move.

Rules (core/solve/engine.py, core/solve/trees.py, core/solve/placement.py): any sequence of quota,
pod and node events applied one by one gives, at every solve, exactly the snapshot of a fresh engine
loaded with the objects of that moment; a snapshot taken earlier keeps its content whatever happens
afterwards; ``take_changed(tree)`` names exactly the quotas whose result differs from the one
published when it was last called (every quota of a tree first solved after a topology change;
``take_moved`` the same uncompared: a superset of them, within the tree's quotas), and a quota
whose result a solve does not change keeps the very same result object; one aggregate per quota
equals the sum of its pods' contributions.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from engine_strategies import any_node, any_pod, any_quota, clusters, one_pod, resource_lists
from engine_world import OBJECT_EVENT, World, observable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import add
from elasticquota.core.solve.accounting import Account, aggregate, contribution
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.results import QuotaResult, Snapshot

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


SOLVE = st.tuples(st.just("solve"), st.none())
#: Object events and solves, pod upserts and solves drawn twice as often as the other events.
EVENTS = st.lists(
    st.one_of(OBJECT_EVENT, st.tuples(st.just("upsert_pod"), any_pod()), SOLVE, SOLVE),
    max_size=40,
)


@SETTINGS
@given(events=EVENTS)
def test_every_solve_equals_a_fresh_engine_and_old_snapshots_never_move(
    events: list[tuple[str, Any]],
) -> None:
    engine, world = QuotaEngine(), World()
    kept: list[tuple[Snapshot, dict[str, Any]]] = []
    for kind, item in events:
        if kind != "solve":
            world.apply(engine, kind, item)
            continue
        snapshot = engine.solve()
        assert observable(snapshot) == observable(world.fresh(engine))
        kept.append((snapshot, copy.deepcopy(observable(snapshot))))
    final = engine.solve()
    assert observable(final) == observable(world.fresh(engine))
    for snapshot, content in kept:
        assert observable(snapshot) == content


def differing(before: Mapping[str, QuotaResult], after: Mapping[str, QuotaResult]) -> set[str]:
    return {name for name, result in after.items() if before.get(name) != result}


POD_OR_NODE_EVENTS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert_pod"), st.integers(0, 7)),
        st.tuples(st.just("delete_pod"), st.integers(0, 7)),
        st.tuples(st.just("upsert_node"), any_node()),
        st.tuples(st.just("delete_node"), any_node()),
        SOLVE,
        st.tuples(st.just("take"), st.none()),
    ),
    max_size=40,
)


@SETTINGS
@given(cluster=clusters(), events=POD_OR_NODE_EVENTS, data=st.data())
def test_the_changed_names_are_exactly_the_quotas_whose_results_differ(
    cluster: Any, events: list[tuple[str, Any]], data: st.DataObject
) -> None:
    """Between two topology changes: changed == differing, and the others are the same objects."""
    engine = QuotaEngine().load(cluster.quotas, cluster.pods, cluster.nodes)
    labels = [spec.name for spec in cluster.quotas]
    seen: dict[str, Mapping[str, QuotaResult]] = {}
    for tree_id in engine.tree_ids():
        engine.solve_tree(tree_id)
        assert engine.take_changed(tree_id) == set(engine.solve_tree(tree_id))  # all new
        seen[tree_id] = engine.solve_tree(tree_id)
    published = dict(seen)
    for kind, item in events:
        if kind == "upsert_pod":
            engine.upsert_pod(data.draw(one_pod(f"p{item}", labels)))
        elif kind == "delete_pod":
            engine.delete_pod("team", f"p{item}")
        elif kind == "upsert_node":
            engine.upsert_node(item)
        elif kind == "delete_node":
            engine.delete_node(item.name)
        elif kind == "solve":
            engine.solve()
            check_reused(engine, published)
        else:
            check_changed(engine, seen, exact=data.draw(st.booleans()))
    engine.solve()
    check_changed(engine, seen, exact=True)


def check_reused(engine: QuotaEngine, published: dict[str, Mapping[str, QuotaResult]]) -> None:
    """A quota whose result did not change at a solve keeps the very same result object."""
    for tree_id in engine.tree_ids():
        results = engine.solve_tree(tree_id)
        for name, result in results.items():
            if published[tree_id][name] == result:
                assert result is published[tree_id][name]
        published[tree_id] = results


def check_changed(
    engine: QuotaEngine, seen: dict[str, Mapping[str, QuotaResult]], exact: bool
) -> None:
    """``take_changed`` (``exact``) against what the last take saw, or ``take_moved``: every
    one of those and perhaps some whose result moved back (solved trees only: a dirty tree's
    changes are known at its next solve)."""
    for tree_id in engine.tree_ids():
        if tree_id in engine.dirty_trees():
            continue
        results = engine.solve_tree(tree_id)
        if exact:
            assert engine.take_changed(tree_id) == differing(seen[tree_id], results)
        else:
            assert differing(seen[tree_id], results) <= engine.take_moved(tree_id) <= set(results)
        seen[tree_id] = results


@SETTINGS
@given(cluster=clusters(), change=any_quota())
def test_after_a_topology_change_every_quota_counts_as_changed(cluster: Any, change: Any) -> None:
    engine = QuotaEngine().load(cluster.quotas, cluster.pods, cluster.nodes)
    engine.solve()
    for tree_id in engine.tree_ids():
        engine.take_changed(tree_id)
    engine.upsert_quota(change)
    engine.solve()
    for tree_id in engine.tree_ids():
        assert engine.take_changed(tree_id) == set(engine.solve_tree(tree_id))


@settings(max_examples=100, deadline=None)
@given(
    pods=st.lists(one_pod("p", ["a"], large=True), max_size=12),
    spec_max=resource_lists(large=True),
)
def test_one_aggregate_equals_the_sum_of_the_pods_contributions(
    pods: list[PodInfo], spec_max: dict[str, int]
) -> None:
    expected: list[dict[str, int]] = [{}, {}, {}, {}]
    for pod in pods:
        for account in Account:
            amount = contribution(pod, "a", spec_max).amounts[account]
            expected[account] = add(expected[account], amount)
    summed = aggregate(pods, spec_max)
    for account in Account:  # a key may be present with 0 on one side only: both add nothing
        keys = set(expected[account]) | set(summed[account])
        assert {key: summed[account].get(key, 0) for key in keys} == {
            key: expected[account].get(key, 0) for key in keys
        }


def test_a_pod_changed_while_a_rebuild_is_pending_counts_once_with_its_last_state() -> None:
    engine = QuotaEngine(EngineSettings())
    quota_a = Quota(name="a", namespace="team", max={"cpu": 100})
    quota_b = Quota(name="b", namespace="team", max={"cpu": 100})
    first = PodInfo(namespace="team", name="x", requests={"cpu": 7}, quota_label="a")
    engine.load([quota_a], [first]).solve()
    engine.upsert_quota(quota_b)  # the rebuild waits for the next solve
    engine.upsert_pod(PodInfo(namespace="team", name="x", requests={"cpu": 9}, quota_label="b"))
    engine.upsert_pod(PodInfo(namespace="team", name="y", requests={"cpu": 1}, quota_label="a"))
    engine.delete_pod("team", "y")

    snapshot = engine.solve()

    assert (snapshot.quotas["a"].request, snapshot.quotas["b"].request) == ({"cpu": 0}, {"cpu": 9})
    assert [pod.requests for pod in snapshot.pods_of("b")] == [{"cpu": 9}]
    assert snapshot.pods_of("a") == () and dict(snapshot.pod_quota) == {"team/x": "b"}


def test_a_trees_results_come_root_first_then_breadth_first_then_the_reserved_ones() -> None:
    """The order the writer diffs a whole tree in (and a snapshot lists it in) is stable."""
    specs = [
        Quota(name="z", namespace="team", max={"cpu": 9}, is_parent=True),
        Quota(name="a", namespace="team", max={"cpu": 9}),
        Quota(name="m", namespace="team", max={"cpu": 9}, parent="z"),
        Quota(name="b", namespace="team", max={"cpu": 9}, parent="z"),
    ]
    engine = QuotaEngine().load(specs, [PodInfo("team", "p", {"cpu": 1}, quota_label="b")])
    expected = [ROOT_QUOTA, "a", "z", "b", "m", SYSTEM_QUOTA, DEFAULT_QUOTA]
    assert list(engine.solve_tree("")) == expected
    engine.upsert_pod(PodInfo("team", "p", {"cpu": 2}, quota_label="b"))
    assert list(engine.solve_tree("")) == expected
