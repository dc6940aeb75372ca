"""User and group limits in admission: ``check_pod``, ``pending_verdicts`` and gating.

A pending pod may start only if its quota's own check passes and every user and group limit on its
path (leaf to root) still holds with it added; the reason names the user or group, the quota, the
resource (or "applications") and the numbers. Decreases are never refused; a limit lowered below
usage holds new pods back and is reported, nothing is evicted.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from userlimits_builders import NODE, limited_quota
from userlimits_builders import user_pod as pod

from elasticquota.core.decisions.admission import check_pod
from elasticquota.core.decisions.explain import explain
from elasticquota.core.decisions.gating import gate_decisions, pending_verdicts
from elasticquota.core.decisions.revocation import revocation_plan
from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.userlimits.records import LimitRefusal, OverUse


def quota(
    name: str,
    parent: str = ROOT_QUOTA,
    limits: str | None = None,
    is_parent: bool = False,
    cpu: int = 1_000_000,
) -> Quota:
    """A quota whose min and max are ``cpu``."""
    cpus = {"cpu": cpu}
    return limited_quota(name, parent, limits, is_parent, min=cpus, max=cpus)


def solve(quotas: list[Quota], pods: list[PodInfo]) -> Snapshot:
    return QuotaEngine().load(quotas, pods, [NODE]).solve()


def two_levels(root: str | None = None, leaf: str | None = None) -> list[Quota]:
    return [quota("root", limits=root, is_parent=True), quota("leaf", "root", leaf)]


def test_a_user_limit_at_an_ancestor_refuses_with_user_quota_resource_and_numbers() -> None:
    snapshot = solve(
        two_levels(root='- limit: "sue at root"\n  users: [sue]\n  maxresources: {cpu: 2}'),
        [pod("a", cpu=1_500), pod("new", cpu=1_000, state="gated")],
    )
    verdict = check_pod(snapshot, snapshot.pods["ns/new"])
    assert not verdict.admitted
    assert verdict.shortfalls == ()  # the quota itself has room
    assert verdict.reason == (
        "user sue at quota root: cpu: requested 1, used 1500m of limit 2 (user limit sue at root)"
    )
    (refusal,) = verdict.limit_refusals
    assert (refusal.kind, refusal.name, refusal.quota, refusal.resource) == (
        "user",
        "sue",
        "root",
        "cpu",
    )
    # Exactly at the limit is allowed.
    assert check_pod(snapshot, replace(snapshot.pods["ns/new"], requests={"cpu": 500})).admitted


def test_a_group_applications_limit_refuses_a_new_application_not_a_running_one() -> None:
    limits = '- groups: [dev]\n  maxapplications: 1\n- groups: ["*"]\n  maxapplications: 9'
    snapshot = solve(
        two_levels(leaf=limits),
        [
            pod("a", groups=("dev",), app="ns/x"),
            pod("same-app", groups=("dev",), app="ns/x", state="gated"),
            pod("new-app", user="bob", groups=("dev",), app="ns/y", state="gated"),
        ],
    )
    verdicts = {v.pod: v for v in pending_verdicts(snapshot)}
    assert verdicts["ns/same-app"].admitted
    assert not verdicts["ns/new-app"].admitted
    assert verdicts["ns/new-app"].reason == (
        "group dev at quota leaf: applications: a new application would make 2 running, "
        "limit 1 (user limit #1)"
    )


def test_quota_shortfalls_and_limit_refusals_are_both_named() -> None:
    snapshot = solve(
        [quota("leaf", cpu=2_000, limits="- users: [sue]\n  maxresources: {cpu: 1}")],
        [pod("a", cpu=1_000), pod("new", cpu=2_000, state="gated")],
    )
    verdict = check_pod(snapshot, snapshot.pods["ns/new"])
    assert not verdict.admitted
    assert verdict.reason.startswith("quota leaf: cpu used 1 + request 2 > runtime 2")
    assert verdict.reason.endswith(
        "user sue at quota leaf: cpu: requested 2, used 1 of limit 1 (user limit #1)"
    )


def test_refusals_and_over_use_quote_amounts_of_bytes_with_their_suffix() -> None:
    """The pod condition, the WaitingForQuota Event and the pod webhook's refusal say 40Gi of
    ephemeral-storage and a limit of 25G of memory, not 42949672960 and 25000000000."""
    gib = 1024**3
    refusal = LimitRefusal(
        "user", "sue", "team", "ephemeral-storage", 40 * gib, 15 * gib, 20 * gib, "disk"
    )
    assert refusal.message == (
        "user sue at quota team: ephemeral-storage: requested 40Gi, used 15Gi of limit 20Gi "
        "(user limit disk)"
    )
    over = OverUse("group", "dev", "team", "memory", 26 * 10**9, 25 * 10**9, "#1")
    assert over.message.startswith(
        "group dev at quota team is over its memory limit: used 26G, limit 25G (user limit #1)"
    )


def test_pods_of_the_reserved_quotas_are_never_limited() -> None:
    snapshot = solve(
        [quota("leaf", limits="- users: [sue]\n  maxapplications: 1")],
        [pod("a"), pod("free", quota_name="unknown", state="gated")],
    )
    assert check_pod(snapshot, snapshot.pods["ns/free"]).admitted


def test_gating_counts_released_pods_and_pods_released_in_the_same_pass() -> None:
    limits = "- users: [sue]\n  maxresources: {cpu: 3}"
    snapshot = solve(
        two_levels(root=limits),
        [
            pod("running"),
            pod("in-flight", state="released"),  # released earlier, not bound yet
            pod("first", state="gated", priority=9),
            pod("second", state="gated", priority=1),
            pod("bob", user="bob", state="gated"),  # another user: not limited
        ],
    )
    decisions = {d.pod.name: d for d in gate_decisions(snapshot)}
    assert decisions["first"].release
    assert not decisions["second"].release
    assert "user sue at quota root: cpu: requested 1, used 3 of limit 3" in (
        decisions["second"].verdict.reason
    )
    assert decisions["bob"].release


def test_a_lowered_limit_is_reported_and_holds_new_pods_but_evicts_nothing() -> None:
    quotas = two_levels(leaf="- users: [sue]\n  maxresources: {cpu: 1}")
    snapshot = solve(quotas, [pod("a"), pod("b"), pod("new", state="gated")])
    ledger = snapshot.user_limits.ledger("")
    assert ledger is not None
    (over,) = ledger.over_use()
    assert over.message.startswith("user sue at quota leaf is over its cpu limit: used 2, limit 1")
    assert revocation_plan(snapshot) == []
    assert not check_pod(snapshot, snapshot.pods["ns/new"]).admitted
    # A pod requesting nothing the limit lists still fits (no over-used resource requested).
    assert check_pod(snapshot, replace(snapshot.pods["ns/new"], requests={"memory": 1})).admitted


# -- property: admission never lets a user or group exceed a limit at any level -------------------

USERS = ("u1", "u2")
GROUPS = ("g1", "g2")
LIMITS = {
    "root": (
        None,
        "- users: [u1]\n  maxresources: {cpu: 4}\n  maxapplications: 3",
        '- users: ["*"]\n  maxresources: {cpu: 5}\n- groups: [g1, "*"]\n  maxapplications: 2',
    ),
    "mid": (
        None,
        "- users: [u1]\n  maxresources: {cpu: 3}\n  maxapplications: 2",
        "- groups: [g2]\n  maxresources: {cpu: 2}",
    ),
    "leaf": (
        None,
        '- users: ["*"]\n  maxresources: {cpu: 2}',
        "- users: [u2]\n  maxapplications: 1",
    ),
}


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Quota], list[PodInfo]]:
    texts = {name: draw(st.sampled_from(options)) for name, options in LIMITS.items()}
    quotas = [
        quota("root", limits=texts["root"], is_parent=True),
        quota("mid", "root", texts["mid"], is_parent=True),
        quota("leaf", "mid", texts["leaf"]),
        quota("side", "root"),
    ]
    pods = [
        pod(
            f"p{index}",
            draw(st.sampled_from(["leaf", "mid", "side"])),
            cpu=draw(st.integers(0, 3)) * 500,
            user=draw(st.sampled_from(USERS)),
            groups=tuple(draw(st.lists(st.sampled_from(GROUPS), max_size=2, unique=True))),
            app=f"ns/{draw(st.sampled_from(['a', 'b', 'c', 'd']))}",
            state="gated",
            priority=draw(st.integers(0, 3)),
        )
        for index in range(draw(st.integers(1, 14)))
    ]
    return quotas, pods


def bind_in_flight(engine: QuotaEngine) -> None:
    for item in list(engine.pods.values()):
        if not item.node_name and not item.scheduling_gates:
            engine.upsert_pod(replace(item, node_name="n1", phase="Running"))


def over_use(engine: QuotaEngine, quotas: list[Quota]) -> list[OverUse]:
    """The tree's user limits broken now; a tree without any limit has no ledger at all."""
    ledger = engine.solve().user_limits.ledger("")
    limited = any(quota.user_limits and quota.user_limits.strip() for quota in quotas)
    assert (ledger is not None) == limited
    return ledger.over_use() if ledger is not None else []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(1, 4))
def test_gating_never_lets_a_user_or_group_exceed_a_limit(
    scenario: tuple[list[Quota], list[PodInfo]], rounds: int
) -> None:
    quotas, pods = scenario
    engine = QuotaEngine().load(quotas, pods, [NODE])
    for _ in range(rounds):
        snapshot = engine.solve()
        released = [d.pod for d in gate_decisions(snapshot) if d.release]
        bind_in_flight(engine)  # released in an earlier round: bound now
        # Half of this round's pods are bound at once, half stay in flight into the next round.
        for index, item in enumerate(released):
            bound = index % 2 == 0
            engine.upsert_pod(
                replace(
                    item,
                    scheduling_gates=(),
                    node_name="n1" if bound else "",
                    phase="Running" if bound else "Pending",
                )
            )
        assert over_use(engine, quotas) == []
    bind_in_flight(engine)
    assert over_use(engine, quotas) == []
    # And it is not stricter than the rule: every pod still held would break a limit or quota.
    snapshot = engine.solve()
    for decision in gate_decisions(snapshot):
        assert not decision.release or decision.verdict.admitted
        if not decision.release:
            assert decision.verdict.limit_refusals or decision.verdict.shortfalls


def test_explain_says_which_user_limit_holds_a_pending_pod() -> None:
    snapshot = solve(
        two_levels(root='- limit: "sue at root"\n  users: [sue]\n  maxapplications: 1'),
        [pod("a", app="ns/x"), pod("new", app="ns/y", state="gated")],
    )
    found = explain(snapshot, "ns/new")
    assert found.state == "pending"
    assert found.verdict == (
        "waits: user sue at quota root: applications: a new application would make 2 running, "
        "limit 1 (user limit sue at root)"
    )
