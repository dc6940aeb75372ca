"""Benchmark of the admission gate's round: its decisions over a cluster's pods, on the event loop.

The gate decides about the gated pods once a second (with the API server's scheduling gates,
Kubernetes 1.27+); it reads the pods not bound to a node, which the engine keeps as pods come and
go (``Snapshot.unbound``), not every pod. Side by side in one run, for clusters of N pods of which
100 are gated and the rest bound, the round with that index and without it (every pod looked at,
as before the index). Prints one line per size:

    gate pods=N gated=G index_ms=I every_pod_ms=E ratio=X

with medians of several rounds (milliseconds of the event loop per round).
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

SIZES = (10_000, 50_000, 100_000)
GATED = 100
ROUNDS = 7
QUOTAS = 100


def cluster(pods: int) -> Snapshot:
    """``QUOTAS`` quotas under the root, one node, ``pods`` pods of 1 cpu (``GATED`` gated)."""
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
    return engine.solve()


def median_ms(snapshot: Snapshot) -> float:
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        decisions = gate_decisions(snapshot)
        times.append((time.perf_counter() - started) * 1000)
    assert len(decisions) == GATED
    return statistics.median(times)


def main() -> None:
    print("# the admission gate's round: decisions over the unbound pods vs over every pod")
    for pods in SIZES:
        snapshot = cluster(pods)
        indexed = median_ms(snapshot)
        every = median_ms(replace(snapshot, unbound=None))
        print(
            f"gate pods={pods} gated={GATED} index_ms={indexed:.2f} every_pod_ms={every:.1f} "
            f"ratio={every / indexed:.0f}"
        )


if __name__ == "__main__":
    main()
