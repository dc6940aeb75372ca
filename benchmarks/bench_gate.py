"""Benchmark of per-pass paths on the event loop at cluster scale: the admission gate's round, its
in-quota preemption, the webhook's judgement of a quota DELETE and of a new pod's user limits.

The gate decides about the gated pods once a second (with the API server's scheduling gates,
Kubernetes 1.27+); it reads the pods not bound to a node, which the engine keeps as pods come and
go (``Snapshot.unbound``), not every pod. Side by side in one run, for clusters of N pods of which
100 are gated and the rest bound, the round with that index and without it (every pod looked at,
as before the index). A quota DELETE is refused while pods are labelled with the quota; the webhook
finds them in the engine's pod index (``pods_labelled``: the pods counted in the quota), not among
every pod; side by side, the judgement of one quota's DELETE with the index and without it, and
(``pending_ms``) with the index while another quota's change awaits its rebuild. The
round's in-quota preemption looks for victims among the waiting pod's quota's pods: with 100 pods
waiting in a quota of a tenth of the cluster (full, nobody of lower priority), side by side, the
quota's candidates kept across rounds (``PreemptionMemo``) and sorted for each waiting pod; then
(``no_room_ms``) the same pods at a higher priority than the quota's, each asking more than the
quota's max: no set of its pods makes room, which the candidates' running totals tell without
walking them (before them: every candidate walked, per waiting pod and round); and
(``young_ms``) pods of a higher priority that only the quota's pods could make room for, all of
them started a second ago under a ten-minute minimum runtime: the protected ones are found by
bisection, not looked at one by one; and (``budget_ms``) pods of a higher priority asking for the
quota's max, which only evicting every one of its pods would make room for, while a
PodDisruptionBudget has kept five of them: the totals less those five answer at once (before:
every candidate walked to the end). Where the API server has no gates, the pod webhook checks a
new pod's user limits with the pods it admitted a moment ago counted: side by side, with N/10 of
them, their figures kept as they come (``PendingPods``) and each added to an overlay of the
ledger for the request. Last, the revocation check (once a second) in a mass over-use, every
quota over its runtime (a node pool lost), whose pods it looks at, quota by quota: its whole
time (``check_ms``) and the longest stretch it held the event loop (``longest_hold_ms``: it
yields after each slice of 5 ms), to hold under the loop's 100 ms. Prints one line per size and
path (the preempt line wrapped here):

    gate pods=N gated=G index_ms=I every_pod_ms=E ratio=X
    delete pods=N quota_pods=Q index_ms=I pending_ms=P every_pod_ms=E ratio=X
    preempt pods=N quota_pods=Q waiting=W memo_ms=M every_pod_ms=E ratio=X no_room_ms=R young_ms=Y
           budget_ms=B
    admit pods=N admitted=A kept_ms=K every_admitted_ms=E ratio=X
    revoke quotas=Q pods=N over_used=O check_ms=C longest_hold_ms=H

with medians of several rounds (milliseconds of the event loop per round or request).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import replace
from typing import Any

from elasticquota.controller.cluster import DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.gating import gate_decisions
from elasticquota.core.decisions.minruntime import NO_MIN_RUNTIME, MinRuntime
from elasticquota.core.decisions.preemption import PreemptionMemo, preemption_victims
from elasticquota.core.keys import ADMISSION_GATE, POD_LABEL_QUOTA
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.userlimits.pending import PendingPods
from elasticquota.core.validation import validate_quota_delete
from elasticquota.core.validation.view import ClusterView
from elasticquota.settings import Settings

SIZES = (10_000, 50_000, 100_000)
GATED = 100
ROUNDS = 7
QUOTAS = 100
#: Quotas of the preemption figures: the first holds a tenth of the pods.
PREEMPT_QUOTAS = 10
#: The minimum runtime of the ``young_ms`` figure: ten minutes, every bound pod started a second
#: before ``now``.
YOUNG = MinRuntime(600.0, 1_000_000.0)
#: The pods a PodDisruptionBudget kept in the ``budget_ms`` figure: five of quota q0's.
BUDGET_KEPT = tuple(f"team/p{index}" for index in range(GATED, GATED + 5 * PREEMPT_QUOTAS, 10))
#: The user limit of the admission figures (quota q1): one that counts every application.
USER_LIMITS = "- users: [sue]\n  maxapplications: 1000000\n"
#: The revocation figure: this many quotas of ``REVOKE_PODS`` 1-cpu pods each, on a node of half
#: what they use.
REVOKE_QUOTAS = 10_000
REVOKE_PODS = 10


def cluster(
    pods: int,
    quotas: int = QUOTAS,
    full: bool = False,
    hopeless: bool = False,
    started: float | None = None,
    hungry: bool = False,
) -> QuotaEngine:
    """``quotas`` quotas under the root, one node, ``pods`` pods of 1 cpu (``GATED`` gated),
    solved. ``full``: each quota's max is its share of the pods, the bound pods have priority 1
    and the gated pods (priority 0) are all of the first quota: most of them wait, and no pod of
    lower priority can make room for them. ``hopeless``: the gated pods have priority 2 and ask
    for more than the quota's max: every bound pod of the quota is a candidate, and evicting all
    of them makes no room. ``started``: the bound pods' start time (epoch seconds; with
    ``full``, the gated pods then have priority 2: every bound pod of the quota is a candidate).
    ``hungry``: the gated pods have priority 2 and ask for the quota's max: only evicting every
    bound pod of the quota makes room."""
    engine = QuotaEngine()
    engine.upsert_node(NodeInfo(name="n", allocatable={"cpu": 10 * pods * 1000}))
    limit = pods // quotas * 1000 if full else 10 * pods * 1000
    for index in range(quotas):
        engine.upsert_quota(Quota(name=f"q{index}", namespace="team", min={}, max={"cpu": limit}))
    for index in range(pods):
        gated = index < GATED
        engine.upsert_pod(
            PodInfo(
                namespace="team",
                name=f"p{index}",
                requests={"cpu": gated_cpu(limit, gated, hopeless, hungry)},
                quota_label="q0" if gated and full else f"q{index % quotas}",
                priority=pod_priority(gated, full, bool(hopeless or hungry or started)),
                phase="Pending" if gated else "Running",
                node_name="" if gated else "n",
                start_time=None if gated else started,
                scheduling_gates=(ADMISSION_GATE,) if gated else (),
                created=f"2026-11-27T10:{index // 60 % 60:02d}:{index % 60:02d}Z",
            )
        )
    engine.solve()
    return engine


def gated_cpu(limit: int, gated: bool, hopeless: bool, hungry: bool) -> int:
    """A pod's cpu request in ``cluster`` (millicores)."""
    if gated and hopeless:
        return limit + 1000
    return limit if gated and hungry else 1000


def pod_priority(gated: bool, full: bool, above: bool) -> int:
    """A pod's priority in ``cluster``: a gated pod's 2 where it is ``above`` the quota's pods,
    else 0; a bound pod's 1 in a ``full`` cluster, else 0."""
    if gated:
        return 2 if above else 0
    return int(full)


def median_ms(snapshot: Snapshot) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        decisions = gate_decisions(snapshot)
        times.append((time.perf_counter() - started) * 1000)
    assert len(decisions) == GATED
    return statistics.median(times)


def delete_ms(engine: QuotaEngine, indexed: bool) -> float:
    """One quota's DELETE judged as the webhook does (refused: pods carry its label), with the
    engine's index of the pods labelled with it or looking at every pod."""
    view = ClusterView(
        engine.specs, engine.pods.values(), labelled=engine.pods_labelled if indexed else None
    )
    old = {"metadata": {"name": "q1", "namespace": "team"}, "spec": {}}
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        refused = validate_quota_delete(old, view)
        times.append((time.perf_counter() - started) * 1000)
    assert [violation.rule for violation in refused] == ["delete-pods"]
    return statistics.median(times)


def preempt_ms(
    snapshot: Snapshot,
    memo: PreemptionMemo | None,
    young: MinRuntime = NO_MIN_RUNTIME,
    spared: frozenset[str] = frozenset(),
) -> tuple[int, float]:
    """The round's in-quota preemption for its waiting pods (how many, and the median): with the
    quotas' candidates kept across rounds (``memo``, made by an earlier round) or sorted for each
    waiting pod; ``young``: the minimum runtime that protects pods; ``spared``: the pods a
    PodDisruptionBudget kept."""
    held = [decision for decision in gate_decisions(snapshot) if not decision.release]
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        chosen = [
            preemption_victims(decision.seen, decision.pod, memo, spared, young)
            for decision in held
        ]
        times.append((time.perf_counter() - started) * 1000)
    assert held and chosen == [None] * len(held)
    return len(held), statistics.median(times)


def admitted_ms(engine: QuotaEngine, admitted: int, kept: bool) -> float:
    """The pod webhook's user-limit check of a new pod (API servers without gates) with
    ``admitted`` pods of the same user admitted a moment ago and not bound yet: their figures
    kept as they come (``PendingPods``, ``kept``) or each added to an overlay of the ledger."""
    view = engine.user_limits()
    pods = [
        PodInfo(namespace="team", name=f"new{index}", requests={"cpu": 1000}, user="sue")
        for index in range(admitted + 1)
    ]
    pending = PendingPods()
    for index, pod in enumerate(pods[1:]):
        pending.put(pod, f"q{index % QUOTAS}")
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        if kept:
            verdict = pending.check(view, pods[0], "q1")
        else:
            overlay = view.overlay()
            for index, pod in enumerate(pods[1:]):
                overlay.add(pod, f"q{index % QUOTAS}")
            verdict = overlay.check(pods[0], "q1")
        times.append((time.perf_counter() - started) * 1000)
    assert verdict is not None and verdict.allowed
    return statistics.median(times)


def over_used_world() -> ControllerState:
    """``REVOKE_QUOTAS`` quotas under the root, each running ``REVOKE_PODS`` pods of 1 cpu, on a
    node of half the cpu they use: every quota is over its runtime."""
    state = ControllerState.create(EngineSettings())
    state.on_node(
        {
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": str(REVOKE_QUOTAS * REVOKE_PODS // 2)}},
        }
    )
    for index in range(REVOKE_QUOTAS):
        spec = {"min": {"cpu": "0"}, "max": {"cpu": str(REVOKE_PODS * 10)}}
        state.on_quota({"metadata": {"name": f"q{index}", "namespace": "team"}, "spec": spec})
        for number in range(REVOKE_PODS):
            state.on_pod(running_pod(f"p{index}-{number}", f"q{index}"))
    state.mark_synced()
    return state


def running_pod(name: str, quota: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team", "labels": {POD_LABEL_QUOTA: quota}},
        "spec": {
            "nodeName": "n",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


async def revocation_check_ms(state: ControllerState) -> tuple[int, float, float]:
    """How many quotas are over-used, the median of the checks after the first (which starts
    their timers), and the longest the event loop was held meanwhile (the gap between two turns
    of a task that only yields). A dry run, with a delay no check reaches: nothing is evicted."""
    now = [100.0]
    settings = Settings(revocation_delay=86400.0)
    context = LoopContext(state, DryRunCluster(), settings, asyncio.Event())
    controller = RevocationController(context, clock=lambda: now[0])
    await controller.check_once()
    times, gaps = [], [0.0]
    ticker = asyncio.create_task(turns(gaps))
    await asyncio.sleep(0)
    for _ in range(ROUNDS):
        now[0] += 1
        started = time.perf_counter()
        await controller.check_once()
        times.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0)  # the ticker notes the stretch that ended the check
    ticker.cancel()
    return len(controller._timer.since), statistics.median(times), max(gaps) * 1000


async def turns(gaps: list[float]) -> None:
    """Yields to the event loop without end, noting each gap between two of its turns."""
    last = time.perf_counter()
    while True:
        await asyncio.sleep(0)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


def main() -> None:
    print("# per-pass paths: with the engine's indexes vs looking at every pod")
    for pods in SIZES:
        engine = cluster(pods)
        snapshot = engine.latest()
        indexed = median_ms(snapshot)
        every = median_ms(replace(snapshot, unbound=None))
        print(
            f"gate pods={pods} gated={GATED} index_ms={indexed:.2f} every_pod_ms={every:.1f} "
            f"ratio={every / indexed:.0f}"
        )
        indexed, every = delete_ms(engine, True), delete_ms(engine, False)
        engine.upsert_quota(Quota("q2", "team", {}, {"cpu": 1000}))  # awaits its rebuild
        pending = delete_ms(engine, True)
        engine.latest()
        print(
            f"delete pods={pods} quota_pods={len(snapshot.pods_of('q1'))} "
            f"index_ms={indexed:.2f} pending_ms={pending:.2f} every_pod_ms={every:.1f} "
            f"ratio={every / indexed:.0f}"
        )
        crowded = cluster(pods, PREEMPT_QUOTAS, full=True).latest()
        memo = PreemptionMemo()
        preempt_ms(crowded, memo)  # the round that sorts the quota's candidates
        held, kept = preempt_ms(crowded, memo)
        every = preempt_ms(crowded, None)[1]
        no_room = preempt_ms(cluster(pods, PREEMPT_QUOTAS, True, True).latest(), memo)[1]
        recent = cluster(pods, PREEMPT_QUOTAS, True, started=YOUNG.now - 1).latest()
        young = preempt_ms(recent, memo, YOUNG)[1]
        hungry = cluster(pods, PREEMPT_QUOTAS, True, hungry=True).latest()
        budgets = preempt_ms(hungry, memo, spared=frozenset(BUDGET_KEPT))[1]
        print(
            f"preempt pods={pods} quota_pods={len(crowded.pods_of('q0'))} waiting={held} "
            f"memo_ms={kept:.2f} every_pod_ms={every:.1f} ratio={every / kept:.0f} "
            f"no_room_ms={no_room:.2f} young_ms={young:.2f} budget_ms={budgets:.2f}"
        )
        limit = {"cpu": 10 * pods * 1000}
        engine.upsert_quota(Quota("q1", "team", {}, limit, user_limits=USER_LIMITS))
        admitted = pods // 10
        kept, every = admitted_ms(engine, admitted, True), admitted_ms(engine, admitted, False)
        print(
            f"admit pods={pods} admitted={admitted} kept_ms={kept:.2f} "
            f"every_admitted_ms={every:.1f} ratio={every / kept:.0f}"
        )

    over, checked, longest = asyncio.run(revocation_check_ms(over_used_world()))
    print(
        f"revoke quotas={REVOKE_QUOTAS} pods={REVOKE_QUOTAS * REVOKE_PODS} over_used={over} "
        f"check_ms={checked:.1f} longest_hold_ms={longest:.1f}"
    )


if __name__ == "__main__":
    main()
