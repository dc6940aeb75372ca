"""Admission gating: gated pods go when they fit, highest priority then oldest, none overshoots."""

from __future__ import annotations

from dataclasses import replace

from elasticquota.core.decisions.gating import (
    GateDecision,
    gate_decisions,
    gate_wait,
    gates_with_admission,
    is_gated,
)
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import Snapshot
from elasticquota.kube.pods import gates_supported


def pod(name: str, cpu: int, priority: int = 0, created: str = "", gated: bool = True) -> PodInfo:
    return PodInfo(
        namespace="ns",
        name=name,
        requests={"cpu": cpu},
        quota_label="team",
        priority=priority,
        created=created,
        scheduling_gates=(ADMISSION_GATE,) if gated else (),
    )


def solve(*pods: PodInfo) -> Snapshot:
    """One quota holding exactly 4 cpu (min = max, not lending) on an 8-cpu cluster."""
    team = Quota(
        name="team", namespace="ns", min={"cpu": 4000}, max={"cpu": 4000}, allow_lent=False
    )
    node = NodeInfo(name="n1", allocatable={"cpu": 8000})
    return QuotaEngine().load(quotas=[team], pods=pods, nodes=[node]).solve()


def test_pods_go_highest_priority_first_then_oldest_and_never_overshoot_together() -> None:
    snapshot = solve(
        pod("old", 2000, 5, "2026-01-01T00:00:00Z"),
        pod("new", 2000, 5, "2026-01-02T00:00:00Z"),
        pod("urgent", 2000, 9, "2026-01-03T00:00:00Z"),
    )
    decisions = gate_decisions(snapshot)
    assert [(d.pod.name, d.release) for d in decisions] == [
        ("urgent", True),
        ("old", True),
        ("new", False),  # alone it would fit; after the two released ones it would not
    ]
    assert decisions[2].verdict.reason == "quota team: cpu used 4 + request 2 > runtime 4"


def test_released_pods_not_yet_bound_count_as_in_flight() -> None:
    snapshot = solve(pod("released", 3000, gated=False), pod("waiting", 2000))
    (decision,) = gate_decisions(snapshot)
    assert decision.pod.name == "waiting" and not decision.release


def test_only_pending_pods_with_our_gate_are_decided() -> None:
    running = PodInfo(
        namespace="ns", name="running", requests={"cpu": 1000}, quota_label="team",
        node_name="n1", phase="Running", scheduling_gates=(ADMISSION_GATE,),
    )  # fmt: skip
    other_gate = PodInfo(
        namespace="ns", name="other", requests={"cpu": 1000}, quota_label="team",
        scheduling_gates=("example.com/other",),
    )  # fmt: skip
    assert not is_gated(running) and not is_gated(other_gate)
    assert gate_decisions(solve(running, other_gate)) == []


def test_pods_of_reserved_quotas_are_never_held() -> None:
    orphan = PodInfo(
        namespace="elsewhere", name="p", requests={"cpu": 10**9},
        scheduling_gates=(ADMISSION_GATE,),
    )  # fmt: skip
    (decision,) = gate_decisions(solve(orphan))
    assert decision.release and "reserved" in decision.verdict.reason


def test_scheduling_gates_need_kubernetes_1_27() -> None:
    assert gates_supported("1", "27")
    assert gates_supported("1", "30+")
    assert not gates_supported("1", "20")
    assert not gates_supported("1", "26+")


def test_the_gate_is_added_after_other_gates_once() -> None:
    pod = {"metadata": {"namespace": "ns"}, "spec": {"schedulingGates": [{"name": "x.io/other"}]}}
    assert gates_with_admission(pod, "team", ["kube-system"]) == [
        {"name": "x.io/other"},
        {"name": ADMISSION_GATE},
    ]
    gated = {
        "metadata": {"namespace": "ns"},
        "spec": {"schedulingGates": [{"name": ADMISSION_GATE}]},
    }
    assert gates_with_admission(gated, "team", ["kube-system"]) is None


def test_excluded_namespaces_reserved_quotas_and_bound_pods_are_not_gated() -> None:
    plain = {"metadata": {"namespace": "ns"}, "spec": {}}
    assert (
        gates_with_admission(
            {**plain, "metadata": {"namespace": "kube-system"}}, "team", ["kube-system"]
        )
        is None
    )
    assert gates_with_admission(plain, "koordinator-system-quota", []) is None
    assert gates_with_admission(plain, "koordinator-default-quota", []) is None
    assert gates_with_admission({**plain, "spec": {"nodeName": "n1"}}, "team", []) is None


def test_the_wait_at_the_gate_starts_at_the_pod_s_creation() -> None:
    """The gate comes with the pod (the mutating webhook): creationTimestamp is its start, known
    after a restart too; a clock behind the API server's gives 0; no valid time: unknown."""
    created = "2026-01-01T00:00:00Z"
    start = 1767225600.0  # 2026-01-01T00:00:00Z
    assert gate_wait(pod("p", 1000, created=created), start + 42.5) == 42.5
    assert gate_wait(pod("p", 1000, created="2026-01-01T00:00:00.250000+00:00"), start + 1) == 0.75
    assert gate_wait(pod("p", 1000, created=created), start - 3) == 0.0
    assert gate_wait(pod("p", 1000, created=""), start) is None
    assert gate_wait(pod("p", 1000, created="yesterday"), start) is None
    assert gate_wait(pod("p", 1000, created="2026-01-01T00:00:00"), start) is None  # no zone


def elastic(*pods: PodInfo, check_ancestors: bool = False) -> list[GateDecision]:
    """Quota ``team`` (min 4, max 10 cpu, lends nothing) under ``dept`` on a 20-cpu cluster."""
    quotas = [
        Quota(name="dept", namespace="ns", min={"cpu": 4000}, max={"cpu": 10000}, is_parent=True),
        Quota(
            name="team", namespace="ns", parent="dept", min={"cpu": 4000}, max={"cpu": 10000},
            allow_lent=False,
        ),
    ]  # fmt: skip
    node = NodeInfo(name="n1", allocatable={"cpu": 20000})
    snapshot = QuotaEngine().load(quotas=quotas, pods=pods, nodes=[node]).solve()
    return gate_decisions(snapshot, check_ancestors)


def test_non_preemptible_pods_released_together_never_pass_the_min_together() -> None:
    first, second = (replace(pod(name, 3000), preemptible=False) for name in ("np1", "np2"))
    decisions = elastic(first, second)
    assert [(d.pod.name, d.release) for d in decisions] == [("np1", True), ("np2", False)]
    assert decisions[1].verdict.reason == (
        "quota team: cpu used 3 + request 3 > min (non-preemptible) 4"
    )
    # the next round: np1 released, not bound yet
    (decision,) = elastic(replace(first, scheduling_gates=()), second)
    assert decision.pod.name == "np2" and not decision.release


def test_a_preemptible_pod_released_before_leaves_the_min_to_non_preemptible_ones() -> None:
    decisions = elastic(pod("p", 3000, priority=9), replace(pod("np", 3000), preemptible=False))
    assert [(d.pod.name, d.release) for d in decisions] == [("p", True), ("np", True)]


def test_what_a_decision_saw_counts_released_pods_at_each_level_checked() -> None:
    in_flight = pod("released", 3000, gated=False)
    for check_ancestors, dept_used in ((False, 0), (True, 3000)):
        (decision,) = elastic(in_flight, pod("waiting", 2000), check_ancestors=check_ancestors)
        assert decision.seen.quotas["team"].used == {"cpu": 3000}
        assert decision.seen.quotas["dept"].used.get("cpu", 0) == dept_used
