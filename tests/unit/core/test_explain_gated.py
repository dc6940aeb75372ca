"""`explain` of a gated pod says what the gate decides for it (``core.decisions.gating``).

The gate counts pods released but not bound yet, and those released before it in the same round
(higher priority, then older), as if they used their request; explain must count them too, or it
tells a user that a pod "fits now" while the gate keeps it, or names figures the gate never saw.
"""

from __future__ import annotations

from elasticquota.core.decisions.explain import explain
from elasticquota.core.decisions.gating import gate_decisions
from elasticquota.core.decisions.minruntime import MinRuntime, MinRuntimes, moment_text
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import Snapshot


def pod(name: str, cpu: int, gated: bool = False, running: bool = False, **more: object) -> PodInfo:
    return PodInfo(
        namespace="team", name=name, requests={"cpu": cpu}, quota_label="team",
        phase="Running" if running else "Pending", node_name="n1" if running else "",
        scheduling_gates=(ADMISSION_GATE,) if gated else (), **more,  # type: ignore[arg-type]
    )  # fmt: skip


def solved(*pods: PodInfo) -> Snapshot:
    team = Quota(name="team", namespace="team", max={"cpu": 4000})
    node = NodeInfo(name="n1", allocatable={"cpu": 16_000})
    return QuotaEngine().load(quotas=[team], pods=list(pods), nodes=[node]).solve()


def released(snapshot: Snapshot) -> dict[str, bool]:
    return {decision.pod.key: decision.release for decision in gate_decisions(snapshot)}


def test_a_pod_behind_an_earlier_release_of_the_round_waits_as_the_gate_says() -> None:
    first = pod("first", 2000, gated=True, priority=10, created="2024-01-01T00:00:00Z")
    second = pod("second", 2000, gated=True, created="2024-01-01T00:00:00Z")
    snapshot = solved(pod("busy", 1000, running=True), first, second)
    assert released(snapshot) == {"team/first": True, "team/second": False}

    assert explain(snapshot, "team/first").verdict == "fits now (fits in quota team)"
    found = explain(snapshot, "team/second")
    assert found.verdict == "waits: quota team: cpu used 3 + request 2 > runtime 4"
    assert found.levels[0].used == {"cpu": 3000}
    assert found.advice[0].startswith("quota team needs 1 more cpu")


def test_a_pod_behind_a_released_pod_not_bound_yet_waits_as_the_gate_says() -> None:
    snapshot = solved(
        pod("busy", 1000, running=True), pod("bound-soon", 2000), pod("p", 2000, True)
    )
    assert released(snapshot) == {"team/p": False}

    found = explain(snapshot, "team/p")
    assert found.verdict == "waits: quota team: cpu used 3 + request 2 > runtime 4"


def test_a_pod_the_gate_released_waits_for_the_scheduler_not_its_quota() -> None:
    snapshot = solved(pod("busy", 3000, running=True), pod("r", 2000), pod("g", 2000, True))
    keys = {"team/r", "team/g", "team/busy"}  # only r is released and not bound

    found = explain(snapshot, "team/r", released=keys)
    assert found.verdict.startswith("released by the admission gate; waiting for the scheduler")
    assert (found.levels[0].used, found.advice) == ({"cpu": 3000}, [])
    assert explain(snapshot, "team/r").verdict.startswith("waits: quota team: cpu used 3 ")
    assert explain(snapshot, "team/g", released=keys).verdict.startswith("waits: quota team")
    assert explain(snapshot, "team/busy", released=keys).verdict == "within its quota's runtime"


def test_a_gated_pod_is_told_which_lower_priority_pods_preemption_evicts_for_it() -> None:
    low = pod("low", 3000, running=True, priority=0, start_time=1000.0)
    snapshot = solved(low, pod("new", 2000, gated=True, priority=5))
    found = explain(snapshot, "team/new")
    assert found.preemption == (
        "the next gate round evicts 1 lower-priority pod(s) of quota team to make room: team/low"
    )
    assert "preemption: the next gate round evicts 1" in found.render()
    same = solved(low, pod("peer", 2000, gated=True, priority=0))
    assert explain(same, "team/peer").preemption == ""  # nobody of lower priority


def test_a_gated_pod_is_told_whose_minimum_runtime_it_waits_for() -> None:
    low = pod("low", 3000, running=True, priority=0, start_time=1000.0)
    snapshot = solved(low, pod("new", 2000, gated=True, priority=5))
    young = MinRuntimes(MinRuntime(600.0, 1100.0))
    found = explain(snapshot, "team/new", preemption_min_runtimes=young)
    assert found.preemption == (
        "waits for the minimum runtime (600 s) of team/low, lower-priority pods of quota team: "
        f"they may be evicted to make room from {moment_text(1600.0)}"
    )
    assert explain(snapshot, "team/new", min_runtimes=young).preemption.startswith("the next")
