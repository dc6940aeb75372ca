"""In-quota preemption's candidates kept across the gate's rounds (``PreemptionMemo``): made again
only when a quota's pods changed. Whatever came in between (pods bound, deleted, terminating,
of other priorities, quota changes awaiting their rebuild), a waiting pod's candidates must be
exactly the quota's pods the rule allows, least important first, and its victims the same as
without the memo."""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import replace

import pytest
from engine_factories import EngineFactory, node, pod, quota

from elasticquota.core.decisions.preemption import (
    PreemptionMemo,
    QuotaCandidates,
    preemption_victims,
)
from elasticquota.core.decisions.revocation import least_important_first
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import add, exceeding, mask, subtract_clamped
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.rebuild import compute_rebuild
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.solve.solvejob import compute


def by_filter(snapshot: Snapshot, quota_name: str, priority: int) -> list[PodInfo]:
    return least_important_first(
        other
        for other in snapshot.pods_of(quota_name)
        if other.is_assigned
        and other.preemptible
        and not other.terminating
        and other.priority < priority
    )


def random_step(engine: QuotaEngine, rng: random.Random) -> None:
    name = f"p{rng.randrange(16)}"
    action = rng.randrange(8)
    if action == 0:
        engine.delete_pod("team", name)
    elif action == 1:  # a quota change: the pods wait for the topology rebuild
        engine.upsert_quota(quota(rng.choice("ab"), max={"cpu": rng.randrange(2, 9)}))
    else:
        made = pod(
            name,
            rng.choice("ab"),
            node="n" if action < 6 else "",
            gates=(ADMISSION_GATE,) if action == 7 else (),
            preemptible=rng.random() < 0.8,
            priority=rng.randrange(4),
            cpu=rng.randrange(1, 4),
        )
        engine.upsert_pod(replace(made, terminating=rng.random() < 0.15))


@pytest.mark.parametrize("seed", range(20))
def test_the_memo_gives_the_candidates_and_victims_of_every_pod(
    make_engine: EngineFactory, seed: int
) -> None:
    rng = random.Random(seed)
    engine = make_engine()
    engine.upsert_node(node("n", cpu=12))
    memo = PreemptionMemo()
    for step in range(60):
        random_step(engine, rng)
        if step % 3:
            continue
        snapshot = engine.solve()
        for waiting in snapshot.unbound_pods().values():
            name = snapshot.pod_quota[waiting.key]
            if name not in ("a", "b"):
                continue
            candidates = memo.candidates(snapshot, name)
            assert list(candidates.below(waiting.priority)) == by_filter(
                snapshot, name, waiting.priority
            )
            going = any(
                other.terminating and other.priority < waiting.priority
                for other in snapshot.pods_of(name)
            )
            assert candidates.terminating_below(waiting.priority) == going
            victims = preemption_victims(snapshot, waiting, memo)
            assert victims == preemption_victims(snapshot, waiting)
            check_room(snapshot, waiting, candidates, victims)
            spared = {key for key in snapshot.pods if rng.random() < 0.25}  # any quota, priority
            around = preemption_victims(snapshot, waiting, memo, spared=spared)
            assert around == preemption_victims(snapshot, waiting, spared=spared)
            check_room(snapshot, waiting, candidates, around, spared)


def test_a_quota_whose_pods_did_not_change_is_not_sorted_again(
    make_engine: EngineFactory,
) -> None:
    engine = make_engine().load(
        [quota("a", max={"cpu": 2}), quota("b", max={"cpu": 2})],
        [pod("low", "a", node="n", cpu=2), pod("other", "b", node="n", cpu=1)],
        [node("n", cpu=10)],
    )
    memo = PreemptionMemo()
    first = memo.candidates(engine.solve(), "a")
    engine.upsert_pod(pod("more", "b", node="n", cpu=1))  # another quota's pods change
    assert memo.candidates(engine.solve(), "a") is first
    engine.upsert_pod(pod("new", "a", node="n", cpu=1, priority=1))
    again = memo.candidates(engine.solve(), "a")
    assert again is not first
    assert [each.name for each in again.ordered] == ["low", "new"]
    memo.keep_only({"b"})
    assert memo.candidates(engine.solve(), "a") is not again


def counted_in(snapshot: Snapshot, quota_name: str) -> list[PodInfo]:
    """The quota's pods as the snapshot's pod -> quota map says, not from its pods tuple."""
    pods = snapshot.pods.items()
    return sorted(
        (each for key, each in pods if snapshot.pod_quota.get(key) == quota_name),
        key=lambda each: each.key,
    )


@pytest.mark.parametrize("seed", range(10))
def test_the_memo_follows_rebuilds_and_solves_off_the_loop_and_older_snapshots(
    make_engine: EngineFactory, seed: int
) -> None:
    """The gate's snapshot comes from a rebuild or solves prepared, computed while events
    arrive, then finished (``solved_snapshot``), or is the last published one: one read after a
    newer one must still get its own pods' candidates."""
    rng = random.Random(seed)
    engine = make_engine()
    engine.upsert_node(node("n", cpu=12))
    memo, seen = PreemptionMemo(), list[Snapshot]()
    for _ in range(60):
        random_step(engine, rng)
        rebuild = engine.prepare_rebuild()
        solves = [] if rebuild else [engine.prepare_solve(tree) for tree in engine.tree_ids()]
        for _ in range(rng.randrange(3)):
            random_step(engine, rng)
        if rebuild is not None:
            engine.finish_rebuild(rebuild, compute_rebuild(rebuild))
        for job in solves:
            if job is not None:
                engine.finish_solve(job, compute(job, engine.solver))
        seen.append(engine.latest())
        snapshot = rng.choice(seen)
        for name in ("a", "b"):
            expected = QuotaCandidates.of(counted_in(snapshot, name))
            found = memo.candidates(snapshot, name)
            assert (found.ordered, found.lowest_terminating) == (
                expected.ordered,
                expected.lowest_terminating,
            )


def makes_room(snapshot: Snapshot, waiting: PodInfo, evicted: list[PodInfo]) -> bool:
    """Whether ``waiting`` fits its runtime once ``evicted`` are gone (tracked resources)."""
    result = snapshot.quotas[snapshot.pod_quota[waiting.key]]
    used = dict(result.used)
    for victim in evicted:
        used = subtract_clamped(used, mask(victim.requests, result.max))
    return not exceeding(add(used, mask(waiting.requests, result.max)), result.runtime)


def check_room(
    snapshot: Snapshot,
    waiting: PodInfo,
    candidates: QuotaCandidates,
    victims: list[PodInfo] | None,
    spared: Collection[str] = (),
) -> None:
    """Victims make room, none of them ``spared``; None only where even every candidate of lower
    priority but those would not (the candidates' running totals answer that without walking
    them), or a rule forbids it."""
    if victims:
        assert makes_room(snapshot, waiting, victims)
        assert not {victim.key for victim in victims} & set(spared)
    elif victims is None and not (waiting.never_preempts or not waiting.preemptible):
        every = [other for other in candidates.below(waiting.priority) if other.key not in spared]
        gone = candidates.terminating_below(waiting.priority)
        assert gone or not makes_room(snapshot, waiting, every)
