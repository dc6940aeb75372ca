"""In-quota preemption's minimum runtime: pods younger than it are not chosen; other
lower-priority pods make the room if they can, else the waiting pod is deferred until the young
ones may go (``deferred_by_min_runtime``). The quota's ``preemption-min-runtime`` annotation (or
its nearest ancestor's) sets it per quota; revocation's annotation is another walk."""

from __future__ import annotations

import random

import pytest
from preemption_pods import names, pending, running, solve, two_teams

from elasticquota.core.decisions.minruntime import (
    NO_MIN_RUNTIME,
    MinRuntime,
    MinRuntimes,
    inherited_min_runtime,
    of_preemption,
    of_revocation,
)
from elasticquota.core.decisions.preemption import (
    QuotaCandidates,
    deferred_by_min_runtime,
    preemption_victims,
)
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.results import Snapshot

#: Ten minutes, as of epoch second 1,000: a pod that started after second 400 is protected.
TEN_MINUTES = MinRuntime(600.0, 1000.0)


def waiting(cpu: int, *pods: PodInfo) -> tuple[Snapshot, PodInfo]:
    """``pods`` solved with ``new`` (priority 5, ``cpu`` millicores) waiting, and ``new``."""
    snapshot = solve(*pods, pending("new", cpu, 5))
    return snapshot, snapshot.pods["ns/new"]


#: Pods (with ``new``: 2 cpu, priority 5, waiting), the keys spared, then the victims under
#: ``TEN_MINUTES`` and, where there are none, the young pods a deferral names (None: none / no
#: deferral).
CASES = {
    "an older pod of higher priority, still below the waiting one, goes in the young one's place": (
        [running("low", 2000, 0, start_time=900.0), running("mid", 2000, 1, start_time=0.0)],
        set(),
        ["mid"],
        None,
    ),
    "no deferral where even every lower-priority pod would not make room": (
        [running("low", 1000, 0, start_time=900.0), running("peer", 3000, 5, start_time=0.0)],
        set(),
        None,
        None,
    ),
    "a spared pod stays out of the deferral as out of the choice": (
        [running("kept", 2000, 0, start_time=0.0), running("young", 2000, 1, start_time=900.0)],
        {"ns/kept"},
        None,
        ["young"],
    ),
    "a young pod spared as well is not taken off what the older ones free a second time": (
        [running("young", 2000, 0, start_time=900.0), running("old", 2000, 1, start_time=0.0)],
        {"ns/young"},
        ["old"],
        None,
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_young_pods_are_passed_over_and_deferrals_name_only_what_holds_the_pod(case: str) -> None:
    pods, spared, victims, deferred = CASES[case]
    snapshot, new = waiting(2000, *pods)
    assert names(preemption_victims(snapshot, new, spared=spared, young=TEN_MINUTES)) == victims
    if victims is None:  # a deferral is asked for only where the choice made no room
        deferral = deferred_by_min_runtime(snapshot, new, TEN_MINUTES, spared=spared)
        assert (None if deferral is None else names(deferral.young)) == deferred


def test_only_young_pods_could_make_room_so_the_preemption_waits_until_the_last_may_go() -> None:
    snapshot, new = waiting(
        2000,
        running("a", 1000, 0, start_time=700.0),
        running("b", 1000, 0, start_time=900.0),
        running("peer", 2000, 5, start_time=0.0),
    )
    assert names(preemption_victims(snapshot, new)) == ["b", "a"]
    assert preemption_victims(snapshot, new, young=TEN_MINUTES) is None
    deferral = deferred_by_min_runtime(snapshot, new, TEN_MINUTES)
    assert deferral is not None
    assert names(deferral.young) == ["b", "a"] and deferral.until == 1500.0
    later = MinRuntime(600.0, 1500.0)
    assert names(preemption_victims(snapshot, new, young=later)) == ["b", "a"]
    assert deferred_by_min_runtime(snapshot, new, later) is None


def test_a_pod_without_a_start_time_is_not_protected_and_zero_protects_none() -> None:
    snapshot, new = waiting(4000, running("low", 2000, 0, start_time=None))
    assert names(preemption_victims(snapshot, new, young=TEN_MINUTES)) == ["low"]
    snapshot, new = waiting(4000, running("low", 2000, 0, start_time=999.0))
    assert names(preemption_victims(snapshot, new, young=NO_MIN_RUNTIME)) == ["low"]
    assert names(preemption_victims(snapshot, new, young=TEN_MINUTES)) is None


def family() -> dict[str, Quota]:
    """``dept`` (preemption 600 s, revocation 60 s) above ``team`` (none) and ``solo`` (its
    own preemption 0: off below it)."""
    quotas = [
        Quota(
            name="dept",
            namespace="ns",
            is_parent=True,
            preemption_min_runtime=600.0,
            revocation_min_runtime=60.0,
        ),
        Quota(name="team", namespace="ns", parent="dept"),
        Quota(name="solo", namespace="ns", parent="dept", preemption_min_runtime=0.0),
    ]
    return {spec.name: spec for spec in quotas}


def test_the_preemption_annotation_is_inherited_and_revocations_is_another_walk() -> None:
    specs = family()
    for quota, preemption, revocation in [("team", 600.0, 60.0), ("solo", 0.0, 60.0)]:
        assert inherited_min_runtime(quota, specs.get, 30.0, of_preemption) == preemption
        assert inherited_min_runtime(quota, specs.get, 30.0, of_revocation) == revocation
    assert inherited_min_runtime("unknown", specs.get, 30.0, of_preemption) == 30.0
    walk = MinRuntimes(MinRuntime(30.0, 1000.0), specs.get, of_preemption)
    assert walk.of("team") == MinRuntime(600.0, 1000.0) and walk.of("solo").seconds == 0.0


def test_a_quota_with_its_own_minimum_protects_its_pods_in_a_live_solve() -> None:
    quotas = two_teams(preemption_min_runtime=600.0)
    snapshot = solve(
        running("low", 2000, 0, start_time=900.0), pending("new", 4000, 5), quotas=quotas
    )
    specs = {spec.name: spec for spec in quotas}
    walk = MinRuntimes(MinRuntime(0.0, 1000.0), specs.get, of_preemption)
    assert preemption_victims(snapshot, snapshot.pods["ns/new"], young=walk.of("team")) is None


@pytest.mark.parametrize("seed", range(30))
def test_the_runs_a_minimum_runtime_leaves_are_the_candidates_it_does_not_protect(
    seed: int,
) -> None:
    """``runs_below`` finds the protected pods by bisection: the runs must hold exactly the
    candidates below the priority that ``young`` does not protect, in their order, and the
    running totals what those request."""
    rng = random.Random(seed)
    starts = [None, *(float(second) for second in range(0, 1000, 50))]
    pods = [
        running(
            f"p{n}", rng.randrange(1, 5) * 1000, rng.randrange(4), start_time=rng.choice(starts)
        )
        for n in range(rng.randrange(0, 40))
    ]
    candidates = QuotaCandidates.of(pods)
    for _ in range(10):
        young = MinRuntime(rng.choice([0.0, 100.0, 600.0]), 1000.0)
        priority = rng.randrange(6)
        runs = candidates.runs_below(priority, young)
        walked = [candidates.ordered[i] for low, high in runs for i in range(low, high)]
        allowed = [pod for pod in candidates.below(priority) if not young.protects(pod)]
        assert walked == allowed
        assert candidates.freeable(runs) == (
            {"cpu": sum(pod.requests["cpu"] for pod in allowed)} if runs else {}
        )
