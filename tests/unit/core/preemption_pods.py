"""Pods of quota ``team`` (and ``other``) and their solve, for the in-quota preemption tests.

A plain module (the ``conftest`` modules of several tiers share a name, so helpers that tests
import live in uniquely named modules).
"""

from __future__ import annotations

from collections.abc import Sequence

from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import Snapshot


def running(name: str, cpu: int, priority: int, quota: str = "team", **extra: object) -> PodInfo:
    """A pod Running on ``n1`` that started at epoch second ``priority`` (unless ``extra`` sets
    ``start_time``): of two pods, the less important one started earlier."""
    fields: dict[str, object] = {"start_time": float(priority), **extra}
    return PodInfo(
        namespace="ns",
        name=name,
        requests={"cpu": cpu},
        quota_label=quota,
        priority=priority,
        node_name="n1",
        phase="Running",
        **fields,  # type: ignore[arg-type]
    )


def pending(name: str, cpu: int, priority: int, quota: str = "team") -> PodInfo:
    return PodInfo(
        namespace="ns", name=name, requests={"cpu": cpu}, quota_label=quota, priority=priority
    )


def two_teams(**extra: object) -> list[Quota]:
    """Quotas ``team`` and ``other``, min = max = 4 cpu each, lending nothing (``extra``: more
    fields of both)."""
    return [
        Quota(
            name=name,
            namespace="ns",
            min={"cpu": 4000},
            max={"cpu": 4000},
            allow_lent=False,
            **extra,  # type: ignore[arg-type]
        )
        for name in ("team", "other")
    ]


def solve(*pods: PodInfo, quotas: Sequence[Quota] = ()) -> Snapshot:
    """``quotas`` (else ``two_teams``) on an 8-cpu cluster: runtime 4 whatever happens."""
    node = NodeInfo(name="n1", allocatable={"cpu": 8000})
    chosen = list(quotas) or two_teams()
    return QuotaEngine().load(quotas=chosen, pods=pods, nodes=[node]).solve()


def names(victims: Sequence[PodInfo] | None) -> list[str] | None:
    return None if victims is None else [pod.name for pod in victims]
