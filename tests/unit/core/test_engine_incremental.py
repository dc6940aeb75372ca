"""Incremental updates: whatever the order of events, ``solve()`` equals a fresh solve of the
final objects; the engine is deterministic; repeated events are idempotent."""

from __future__ import annotations

import random
from typing import Any

import pytest
from engine_factories import BIG, EngineFactory, node, pod, quota
from engine_strategies import any_node, any_pod, any_quota, clusters
from engine_world import OBJECT_EVENT, World, observable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.kernels import reference, waterfill

SOLVERS = {"numba": waterfill.solve_tree, "reference": reference.solve_tree}


EVENTS = st.one_of(OBJECT_EVENT, st.tuples(st.just("solve"), st.none()))


def check_incremental_equals_fresh(
    events: list[tuple[str, Any]], scale: bool, solver_name: str
) -> None:
    engine_settings = EngineSettings(scale_min_quota=scale)
    solver = SOLVERS[solver_name]
    engine = QuotaEngine(engine_settings, solver=solver)
    world = World()
    for kind, item in events:
        if kind == "solve":
            engine.solve()
        else:
            world.apply(engine, kind, item)

    snapshot = engine.solve()
    assert observable(snapshot) == observable(world.fresh(engine, engine_settings, solver))


@pytest.mark.parametrize("solver_name", ["numba"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(EVENTS, max_size=25), scale=st.booleans())
def test_any_event_sequence_solves_like_a_fresh_engine(
    events: list[tuple[str, Any]], scale: bool, solver_name: str
) -> None:
    check_incremental_equals_fresh(events, scale, solver_name)


@pytest.mark.slow
@pytest.mark.parametrize("solver_name", ["numba", "reference"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(EVENTS, max_size=60), scale=st.booleans())
def test_long_event_sequences_solve_like_a_fresh_engine(
    events: list[tuple[str, Any]], scale: bool, solver_name: str
) -> None:
    check_incremental_equals_fresh(events, scale, solver_name)


@settings(max_examples=40, deadline=None)
@given(cluster=clusters(), seed=st.integers(0, 2**32 - 1))
def test_load_order_does_not_matter(cluster: Any, seed: int) -> None:
    """Determinism: the same objects in any order give the same snapshot."""
    shuffle = random.Random(seed).sample
    first = QuotaEngine().load(cluster.quotas, cluster.pods, cluster.nodes).solve()
    second = (
        QuotaEngine()
        .load(
            shuffle(cluster.quotas, len(cluster.quotas)),
            shuffle(cluster.pods, len(cluster.pods)),
            shuffle(cluster.nodes, len(cluster.nodes)),
        )
        .solve()
    )
    assert observable(first) == observable(second)


@settings(max_examples=60, deadline=None)
@given(
    quotas=st.lists(any_quota(), max_size=8),
    pods=st.lists(any_pod(), max_size=6, unique_by=lambda item: item.key),
    nodes=st.lists(any_node(), max_size=3, unique_by=lambda item: item.name),
    seed=st.integers(0, 2**32 - 1),
)
def test_load_order_does_not_matter_even_with_broken_quotas(
    quotas: list[Quota], pods: list[PodInfo], nodes: list[NodeInfo], seed: int
) -> None:
    """Duplicated names, cycles, missing parents: problems and results do not depend on order."""
    by_key = {(spec.namespace, spec.name): spec for spec in quotas}
    specs = list(by_key.values())
    shuffle = random.Random(seed).sample
    first = QuotaEngine().load(specs, pods, nodes).solve()
    second = (
        QuotaEngine()
        .load(shuffle(specs, len(specs)), shuffle(pods, len(pods)), shuffle(nodes, len(nodes)))
        .solve()
    )
    assert observable(first) == observable(second)


def test_solving_twice_gives_the_same_snapshot(make_engine: EngineFactory) -> None:
    engine = make_engine().load(
        [quota("a", min={"cpu": 10}, max={"cpu": BIG}), quota("b", max={"cpu": BIG})],
        [pod("x", "a", cpu=70), pod("y", "b", node="n", cpu=70)],
        [node("n", cpu=100)],
    )
    assert observable(engine.solve()) == observable(engine.solve())


def test_updating_a_pod_twice_does_not_double_count(make_engine: EngineFactory) -> None:
    engine = make_engine().load([quota("a", max={"cpu": BIG})], [], [node("n", cpu=100)])
    engine.upsert_pod(pod("x", "a", node="n", cpu=7))
    engine.upsert_pod(pod("x", "a", node="n", cpu=7))
    engine.solve()
    engine.upsert_pod(pod("x", "a", node="n", cpu=7))

    result = engine.solve().quotas["a"]

    assert result.request == {"cpu": 7}
    assert result.used == {"cpu": 7}


def test_deleting_an_unknown_object_is_a_no_op(make_engine: EngineFactory) -> None:
    engine = make_engine().load([quota("a", max={"cpu": BIG})], [pod("x", "a", cpu=7)])
    before = observable(engine.solve())

    engine.delete_pod("team", "nope")
    engine.delete_quota("team", "nope")
    engine.delete_quota("other-namespace", "a")
    engine.delete_node("nope")

    assert observable(engine.solve()) == before


def test_pod_event_between_quota_change_and_solve_is_counted_once(
    make_engine: EngineFactory,
) -> None:
    """A quota change defers pod placement to the next solve; pod events in between count once."""
    engine = make_engine().load([quota("a", max={"cpu": BIG})], [pod("x", "a", cpu=7)])
    engine.solve()
    engine.upsert_quota(quota("b", max={"cpu": BIG}))
    engine.upsert_pod(pod("x", "a", cpu=9))
    engine.upsert_pod(pod("y", "b", cpu=1))
    engine.delete_pod("team", "y")

    snapshot = engine.solve()

    assert snapshot.quotas["a"].request == {"cpu": 9}
    assert snapshot.quotas["b"].request == {"cpu": 0}
