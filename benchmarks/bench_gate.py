"""Benchmark of per-pass paths on the event loop at cluster scale: the admission gate's round and
the webhook's judgement of a quota DELETE.

The gate decides about the gated pods once a second (with the API server's scheduling gates,
Kubernetes 1.27+); it reads the pods not bound to a node, which the engine keeps as pods come and
go (``Snapshot.unbound``), not every pod. Side by side in one run, for clusters of N pods of which
100 are gated and the rest bound, the round with that index and without it (every pod looked at,
as before the index). A quota DELETE is refused while pods are labelled with the quota; the webhook
finds them in the engine's pod index (``pods_labelled``: the pods counted in the quota), not among
every pod; side by side, the judgement of one quota's DELETE with the index and without it. Prints
one line per size and path:

    gate pods=N gated=G index_ms=I every_pod_ms=E ratio=X
    delete pods=N quota_pods=Q index_ms=I every_pod_ms=E ratio=X

with medians of several rounds (milliseconds of the event loop per round or request).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

from elasticquota.core.decisions.gating import gate_decisions
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.validation import validate_quota_delete
from elasticquota.core.validation.view import ClusterView

SIZES = (10_000, 50_000, 100_000)
GATED = 100
ROUNDS = 7
QUOTAS = 100


def cluster(pods: int) -> QuotaEngine:
    """``QUOTAS`` quotas under the root, one node, ``pods`` pods of 1 cpu (``GATED`` gated),
    solved."""
    engine = QuotaEngine()
    engine.upsert_node(NodeInfo(name="n", allocatable={"cpu": 10 * pods * 1000}))
    for index in range(QUOTAS):
        engine.upsert_quota(
            Quota(name=f"q{index}", namespace="team", min={}, max={"cpu": 10 * pods * 1000})
        )
    for index in range(pods):
        gated = index < GATED
        engine.upsert_pod(
            PodInfo(
                namespace="team",
                name=f"p{index}",
                requests={"cpu": 1000},
                quota_label=f"q{index % QUOTAS}",
                phase="Pending" if gated else "Running",
                node_name="" if gated else "n",
                scheduling_gates=(ADMISSION_GATE,) if gated else (),
                created=f"2026-11-27T10:{index // 60 % 60:02d}:{index % 60:02d}Z",
            )
        )
    engine.solve()
    return engine


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
        print(
            f"delete pods={pods} quota_pods={len(snapshot.pods_of('q1'))} "
            f"index_ms={indexed:.2f} every_pod_ms={every:.1f} ratio={every / indexed:.0f}"
        )


if __name__ == "__main__":
    main()
