"""In-quota preemption: the fewest strictly lower-priority pods of the same quota."""

from __future__ import annotations

from dataclasses import replace

from preemption_pods import names, pending, running, solve

from elasticquota.core.decisions.gating import gate_decisions
from elasticquota.core.decisions.preemption import preemption_victims
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import QuotaEngine

MAX = {"cpu": 10_000}


def test_a_pod_that_fits_needs_no_victim() -> None:
    snapshot = solve(running("a", 1000, 0), pending("new", 2000, 5))
    assert preemption_victims(snapshot, snapshot.pods["ns/new"]) == []


def test_the_fewest_lowest_priority_pods_make_room() -> None:
    snapshot = solve(
        running("low", 1000, 0), running("mid", 2000, 1), running("high", 1000, 9),
        pending("new", 2000, 5),
    )  # fmt: skip
    # used 4 + 2 > 4: low (1) is not enough, low + mid is, then low is spared (mid alone frees 2)
    assert names(preemption_victims(snapshot, snapshot.pods["ns/new"])) == ["mid"]


def test_spared_pods_are_never_chosen_and_others_make_the_room_if_they_can() -> None:
    """A pod a PodDisruptionBudget keeps (its eviction refused) is spared: the room comes from the
    next candidates, or from nobody when they cannot make it."""
    snapshot = solve(
        running("low", 2000, 0), running("mid", 1000, 1), running("next", 1000, 2),
        pending("new", 2000, 5),
    )  # fmt: skip
    new = snapshot.pods["ns/new"]
    assert names(preemption_victims(snapshot, new)) == ["low"]
    assert names(preemption_victims(snapshot, new, spared={"ns/low"})) == ["mid", "next"]
    assert preemption_victims(snapshot, new, spared={"ns/low", "ns/next"}) is None


def test_only_strictly_lower_priority_preemptible_running_pods_of_the_same_quota() -> None:
    snapshot = solve(
        running("same", 2000, 5),
        running("guarded", 2000, 0, preemptible=False),
        running("elsewhere", 2000, 0, quota="other"),
        pending("new", 2000, 5),
    )
    assert preemption_victims(snapshot, snapshot.pods["ns/new"]) is None


def test_while_earlier_victims_terminate_nothing_more_is_chosen() -> None:
    """As the reference's wait on a terminating lower-priority pod: they are making room."""
    snapshot = solve(
        running("going", 2000, 0, terminating=True),
        running("low", 2000, 1),
        pending("new", 2000, 5),
    )
    assert preemption_victims(snapshot, snapshot.pods["ns/new"]) is None


def test_a_pod_that_never_preempts_takes_nobodys_place() -> None:
    snapshot = solve(running("low", 4000, 0), pending("new", 2000, 5))
    assert names(preemption_victims(snapshot, snapshot.pods["ns/new"])) == ["low"]
    polite = PodInfo(
        namespace="ns", name="new", requests={"cpu": 2000}, quota_label="team", priority=5,
        never_preempts=True,
    )  # fmt: skip
    assert preemption_victims(solve(running("low", 4000, 0), polite), polite) is None


def test_nothing_is_chosen_when_even_every_candidate_would_not_make_room() -> None:
    snapshot = solve(running("low", 1000, 0), running("high", 3000, 9), pending("new", 3000, 5))
    assert preemption_victims(snapshot, snapshot.pods["ns/new"]) is None


def test_a_non_preemptible_pod_its_min_holds_back_takes_nobody_s_place() -> None:
    """Evicting preemptible pods frees runtime, never non-preemptible room under the min."""
    team = Quota(name="team", namespace="ns", min={"cpu": 4000}, max=MAX, allow_lent=False)
    node = NodeInfo(name="n1", allocatable={"cpu": 20_000})
    new = replace(pending("new", 2000, 9), preemptible=False)
    for pinned, expected in ((4000, None), (2000, ["low"])):
        pods = [running("pinned", pinned, 0, preemptible=False), running("low", 7000, 0), new]
        snapshot = QuotaEngine().load(quotas=[team], pods=pods, nodes=[node]).solve()
        # runtime 10: used + 2 > 10, and evicting low makes room there; min 4: pinned + 2
        assert names(preemption_victims(snapshot, new)) == expected


def test_room_is_made_against_released_pods_not_bound_yet() -> None:
    """A released pod (no gate, no node) counts as used where the gate holds the waiting pod;
    preemption sees the same figures (``GateDecision.seen``), not 'fits already'."""
    snapshot = solve(
        running("low", 2000, 0), pending("released", 2000, 0),
        replace(pending("high", 2000, 9), scheduling_gates=(ADMISSION_GATE,)),
    )  # fmt: skip
    (decision,) = gate_decisions(snapshot)
    assert not decision.release  # used 2 + released 2 + 2 > 4
    assert preemption_victims(snapshot, decision.pod) == []  # bound pods only: it would fit
    assert names(preemption_victims(decision.seen, decision.pod)) == ["low"]
