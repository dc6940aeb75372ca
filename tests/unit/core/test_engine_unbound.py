"""The engine's index of pods not bound to a node (``Snapshot.unbound``): what the gate reads
every round instead of every pod. It must hold exactly the unbound pods whatever came in
between: pods bound, unbound, deleted, gated, also while a quota change awaits its rebuild."""

from __future__ import annotations

import random

import pytest
from engine_factories import EngineFactory, node, pod, quota

from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import Snapshot


def by_filter(snapshot: Snapshot) -> set[str]:
    return {key for key, found in snapshot.pods.items() if not found.node_name}


def random_step(engine: QuotaEngine, rng: random.Random) -> None:
    name = f"p{rng.randrange(12)}"
    action = rng.randrange(5)
    if action == 0:
        engine.delete_pod("team", name)
    elif action == 1:  # a quota change: pods wait for the topology rebuild
        engine.upsert_quota(quota(rng.choice("ab"), max={"cpu": rng.randrange(1, 9)}))
    else:
        bound = {"node": "n"} if action == 2 else {}
        gates = ("g",) if action == 3 else ()
        engine.upsert_pod(pod(name, rng.choice("ab"), gates=gates, cpu=1, **bound))


@pytest.mark.parametrize("seed", range(20))
def test_the_index_holds_exactly_the_unbound_pods(make_engine: EngineFactory, seed: int) -> None:
    rng = random.Random(seed)
    engine = make_engine()
    engine.upsert_node(node("n", cpu=100))
    for step in range(60):
        random_step(engine, rng)
        if step % 3 == 0:
            snapshot = engine.solve()
            assert snapshot.unbound is not None
            assert set(snapshot.unbound) == by_filter(snapshot)
            assert all(snapshot.unbound[key] is snapshot.pods[key] for key in snapshot.unbound)


def test_a_snapshot_without_the_index_finds_them_among_every_pod(
    make_engine: EngineFactory,
) -> None:
    engine = make_engine()
    engine.upsert_pod(pod("waiting", cpu=1))
    engine.upsert_pod(pod("running", node="n", cpu=1))
    snapshot = engine.solve()
    plain = Snapshot(snapshot.quotas, snapshot.totals, snapshot.pods, {}, {})
    assert set(plain.unbound_pods()) == set(snapshot.unbound_pods()) == {"team/waiting"}
