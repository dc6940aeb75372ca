"""Quotas and pods for the tests of user limits in the engine and in admission, made with the
engine tests' ``quota`` and ``pod``.

Everything in namespace ``ns``, on one node ``n1`` big enough never to be the limit; a pod is run
by ``sue`` unless told otherwise and is an application of its own unless given ``app``.
"""

from __future__ import annotations

from engine_factories import pod, quota

from elasticquota.core.keys import ADMISSION_GATE, ROOT_QUOTA
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList

BIG = {"cpu": 1_000_000, "memory": 10**15}
NODE = NodeInfo("n1", dict(BIG))


def limited_quota(
    name: str,
    parent: str = ROOT_QUOTA,
    limits: str | None = None,
    is_parent: bool = False,
    *,
    min: ResourceList | None = None,
    max: ResourceList | None = None,
) -> Quota:
    """A quota with the user-limits annotation ``limits`` (max ``BIG`` unless given)."""
    return quota(
        name,
        min=min,
        max=BIG if max is None else max,
        parent=parent,
        namespace="ns",
        is_parent=is_parent,
        user_limits=limits,
    )


def user_pod(
    name: str,
    quota_name: str = "leaf",
    cpu: int = 1_000,
    user: str = "sue",
    groups: tuple[str, ...] = (),
    app: str = "",
    state: str = "running",
    *,
    phase: str = "Running",
    priority: int = 0,
) -> PodInfo:
    """A pod of ``user`` in ``quota_name``. ``state``: running (bound to ``n1``, in ``phase``),
    gated (held by our gate), released (no gate, not bound)."""
    running = state == "running"
    return pod(
        name,
        quota_name,
        namespace="ns",
        node="n1" if running else "",
        phase=phase if running else "Pending",
        gates=(ADMISSION_GATE,) if state == "gated" else (),
        user=user,
        groups=groups,
        application=app or f"ns/pod:{name}",
        priority=priority,
        cpu=cpu,
    )
