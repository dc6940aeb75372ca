"""The pods labelled with a quota, as the engine's pod index gives them (``pods_labelled``): what a
quota DELETE's webhook reads instead of every pod. Where it answers, it must be exactly the pods
whose label names the quota, by key, whatever came in between: pods relabelled, moved between
namespaces, bound, finished, deleted, quotas changed and awaiting their rebuild (or rebuilt off the
loop while events came in), quotas gone."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from engine_factories import EngineFactory, node, pod, quota

from elasticquota.core.keys import DEFAULT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.rebuild import compute_rebuild
from elasticquota.core.validation import validate_quota_delete
from elasticquota.core.validation.view import ClusterView

#: Labels: valid quotas, the quota named like a namespace, none, one no quota has.
LABELS = ("a", "b", "ns1", "", "gone")
ASKED = ("a", "b", "ns1", "gone", DEFAULT_QUOTA)


def by_filter(engine: QuotaEngine, name: str) -> list[PodInfo]:
    return sorted(
        (found for found in engine.pods.values() if found.quota_label == name),
        key=lambda found: found.key,
    )


def random_step(engine: QuotaEngine, rng: random.Random) -> None:
    name = f"p{rng.randrange(12)}"
    namespace = rng.choice(("team", "ns1"))
    action = rng.randrange(6)
    if action == 0:
        engine.delete_pod(namespace, name)
    elif action == 1:  # a quota change: the index waits for the topology rebuild
        engine.upsert_quota(quota("b", max={"cpu": rng.randrange(1, 9)}))
    elif action == 2:
        engine.delete_quota("team", "b")
    else:
        bound = {"node": "n"} if action == 3 else {}
        labelled = pod(name, rng.choice(LABELS), namespace=namespace, cpu=1, **bound)
        engine.upsert_pod(labelled)


@pytest.mark.parametrize("seed", range(20))
def test_the_index_gives_exactly_the_labelled_pods(make_engine: EngineFactory, seed: int) -> None:
    rng = random.Random(seed)
    engine = make_engine()
    engine.upsert_node(node("n", cpu=100))
    engine.upsert_quota(quota("a"))
    engine.upsert_quota(quota("ns1", namespace="ns1"))  # the unlabelled pods of ns1 count here
    answered = 0
    for step in range(60):
        random_step(engine, rng)
        if step % 3 == 0:
            engine.solve()
        for name in ASKED:
            found = engine.pods_labelled(name)
            if found is not None:
                answered += 1
                expected = by_filter(engine, name)
                assert [each.key for each in found] == [each.key for each in expected]
                assert all(mine is theirs for mine, theirs in zip(found, expected, strict=True))
    assert answered >= 60  # the index answered after most rebuilds, not only the filter


class Unread(list[PodInfo]):
    """Pods that must not be looked at one by one."""

    def __iter__(self) -> Iterator[PodInfo]:
        raise AssertionError("every pod was looked at")


def test_a_quota_delete_reads_the_index_not_every_pod(make_engine: EngineFactory) -> None:
    engine = make_engine().load(
        [quota("a"), quota("b")],
        [pod(f"p{index}", "ab"[index % 2], cpu=1) for index in range(6)],
        [node("n", cpu=10)],
    )
    engine.solve()
    raw = {"metadata": {"name": "a", "namespace": "team"}, "spec": {}}
    indexed = ClusterView([raw], Unread(engine.pods.values()), labelled=engine.pods_labelled)
    every_pod = ClusterView([raw], engine.pods.values())
    refused = validate_quota_delete(raw, indexed)
    assert refused == validate_quota_delete(raw, every_pod)
    assert [violation.rule for violation in refused] == ["delete-pods"]
    assert "3 child pods: team/p0, team/p2, ..." in refused[0].message


@pytest.mark.parametrize("seed", range(10))
def test_the_index_answers_alike_around_a_rebuild_off_the_loop_and_for_finished_pods(
    make_engine: EngineFactory, seed: int
) -> None:
    """A rebuild prepared, computed while events arrive, then finished (``rebuild_off_loop``);
    finished pods (the DELETE rule counts them, as before) and a parent quota among the names."""
    rng = random.Random(seed)
    engine = make_engine()
    engine.upsert_node(node("n", cpu=100))
    engine.upsert_quota(quota("a", parent="top"))
    engine.upsert_quota(quota("top", is_parent=True))
    answered = 0
    for _ in range(40):
        job = engine.prepare_rebuild()
        for _ in range(rng.randrange(1, 4)):
            random_step(engine, rng)
            if rng.random() < 0.3:
                done = pod(f"p{rng.randrange(12)}", rng.choice(("a", "top")), phase="Succeeded")
                engine.upsert_pod(done)
        if job is not None:
            engine.finish_rebuild(job, compute_rebuild(job))
        for name in (*ASKED, "top", SYSTEM_QUOTA):
            found = engine.pods_labelled(name)
            answered += found is not None
            assert found is None or found == by_filter(engine, name)
    assert answered >= 40


def test_a_quota_delete_right_after_another_quota_change_reads_the_index_too(
    make_engine: EngineFactory,
) -> None:
    """The index answers while a quota change awaits its rebuild, with the pods changed since."""
    engine = make_engine().load(
        [quota("a"), quota("b")],
        [pod(f"p{index}", "ab"[index % 2], cpu=1) for index in range(6)],
        [node("n", cpu=10)],
    )
    engine.solve()
    engine.upsert_quota(quota("b", max={"cpu": 5}))
    engine.upsert_pod(pod("p1", "a", cpu=1))  # relabelled while the change waits
    engine.delete_pod("team", "p2")
    assert engine.topology_stale
    raw = {"metadata": {"name": "a", "namespace": "team"}, "spec": {}}
    indexed = ClusterView([raw], Unread(engine.pods.values()), labelled=engine.pods_labelled)
    refused = validate_quota_delete(raw, indexed)
    assert "3 child pods: team/p0, team/p1, ..." in refused[0].message
    assert engine.topology_stale  # answered without rebuilding
