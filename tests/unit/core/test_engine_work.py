"""Regression guard on the engine's work (counted, not timed): what must not grow with the pods.

With the same quotas and the same changes, N and 4N pods: a topology rebuild places the pods with
one aggregate per quota (none per pod), and the next rebuild reuses the aggregates of the quotas
whose pods did not change; a solve after a few pod changes costs a few contributions, builds the
results of the rows that moved only, and touches no other pod (a snapshot is published without
copying, grouping or sorting the pods).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from elasticquota.core.generic import cowmap
from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve import placement, treeresults
from elasticquota.core.solve.accounting import aggregate, contribution
from elasticquota.core.solve.engine import QuotaEngine

PARENTS = 4
LEAVES = 24


def quotas() -> list[Quota]:
    specs = [
        Quota(name=f"p{index}", namespace="team", max={"cpu": 10**9}, is_parent=True)
        for index in range(PARENTS)
    ]
    specs += [
        Quota(
            name=f"q{index}",
            namespace="team",
            min={"cpu": 100},
            max={"cpu": 10**9},
            parent=f"p{index % PARENTS}",
        )
        for index in range(LEAVES)
    ]
    return specs


def pod(index: int, cpu: int = 10) -> PodInfo:
    return PodInfo(
        namespace="team",
        name=f"pod-{index:06d}",
        requests={"cpu": cpu},
        quota_label=f"q{index % LEAVES}",
        node_name="n" if index % 2 else "",
        phase="Running" if index % 2 else "Pending",
    )


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts contributions, aggregates, results built, pod keys computed and walks over a whole
    copy-on-write map (the pods, the index)."""
    counts: Counter[str] = Counter()

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(placement, "contribution", counted("contribution", contribution))
    monkeypatch.setattr(placement, "aggregate", counted("aggregate", aggregate))
    monkeypatch.setattr(treeresults, "_quota_result", counted("result", treeresults._quota_result))
    for view in (cowmap._Buckets, cowmap._Items, cowmap._Values):  # walking a whole map
        monkeypatch.setattr(view, "__iter__", counted("map walk", view.__iter__))
    key = PodInfo.key
    monkeypatch.setattr(PodInfo, "key", property(counted("pod key", key.fget)))  # type: ignore[attr-defined]
    yield counts


def phases(pods: int, counts: Counter[str]) -> dict[str, Counter[str]]:
    """The work of each phase of an engine's life with ``pods`` pods."""
    engine = QuotaEngine().load(quotas(), [pod(index) for index in range(pods)], [])
    engine.upsert_node(NodeInfo("n", {"cpu": 10**6}))
    seen: dict[str, Counter[str]] = {}

    def phase(name: str, action: Callable[[], object]) -> None:
        counts.clear()
        action()
        seen[name] = Counter(counts)

    phase("first rebuild", engine.tree_ids)
    engine.solve()
    engine.upsert_quota(Quota(name="extra", namespace="team", max={"cpu": 1}))
    phase("second rebuild", engine.tree_ids)
    engine.solve()

    def change_and_solve() -> None:
        for index in range(5):
            engine.upsert_pod(pod(index * 7, cpu=11))
        engine.upsert_pod(pod(pods + 1))
        engine.delete_pod("team", pod(3).name)
        engine.solve()

    phase("solve after changes", change_and_solve)
    phase("solve without changes", engine.solve)
    return seen


def without_keys(work: dict[str, Counter[str]]) -> dict[str, Counter[str]]:
    return {
        phase: Counter({k: n for k, n in counts.items() if k != "pod key"})
        for phase, counts in work.items()
    }


def test_the_work_does_not_grow_with_the_pods(work: Counter[str]) -> None:
    small, large = phases(400, work), phases(1600, work)

    assert without_keys(large) == without_keys(small)  # the same, whatever the number of pods
    assert small["first rebuild"]["aggregate"] == LEAVES  # one per quota with pods
    assert small["first rebuild"]["contribution"] == 0  # none per pod
    assert small["second rebuild"]["aggregate"] == 0  # the quotas' pods did not change
    assert small["second rebuild"]["pod key"] == 0  # no pod moved: none looked at
    changes = small["solve after changes"]
    assert changes["contribution"] == 2 * 5 + 1 + 1  # each update leaves and comes back
    assert 0 < changes["result"] < PARENTS + LEAVES  # only rows that moved
    assert changes["map walk"] == 0  # no pod copied, grouped or sorted for the snapshot
    assert small["solve without changes"] == Counter()


def test_a_few_pod_changes_look_at_a_few_pods(work: Counter[str]) -> None:
    """Finding a pod's place in its quota's sorted tuple: O(log pods) keys per change."""
    small, large = phases(400, work), phases(1600, work)
    few, more = small["solve after changes"]["pod key"], large["solve after changes"]["pod key"]
    assert few < 400 / 4 and more < 1600 / 8
    assert more - few <= 7 * 2 * 3  # 7 changes, 2 searches each, log2(4) + 1 more steps


def test_the_first_rebuild_places_every_pod_once(work: Counter[str]) -> None:
    """Linear growth where it is due: re-placing pods looks at each pod a bounded number of times
    (sorting each quota's pods by key)."""
    small, large = phases(400, work), phases(1600, work)
    assert small["first rebuild"]["pod key"] <= 400 * 3
    assert large["first rebuild"]["pod key"] <= 1600 * 3


def test_unchanged_results_are_reused_between_solves() -> None:
    engine = QuotaEngine().load(quotas(), [pod(index) for index in range(100)], [])
    first = engine.solve()
    engine.upsert_pod(pod(0, cpu=12))
    second = engine.solve()
    same = [name for name in first.quotas if first.quotas[name] is second.quotas[name]]
    assert ROOT_QUOTA not in same
    assert len(same) >= LEAVES - 2  # q0's siblings below p0 and the other parents' subtrees
    assert "q0" not in same and "q1" in same
