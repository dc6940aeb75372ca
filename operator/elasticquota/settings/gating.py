"""The gating settings: whether new pods wait behind a scheduling gate until they fit.

The mutating pod webhook gives a new pod of a managed quota the ``elasticquota.dev/admission``
gate; the gate controller (``controller.gating``) releases it when the pod fits its quota.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from elasticquota.settings.values import WEEK, NamespaceName


class GatingSettings(BaseModel):
    """The admission gate on new pods."""

    gating: bool = True
    """Gate new pods of managed quotas with ``elasticquota.dev/admission`` (mutating webhook) and
    release them when they fit (API servers 1.27+; older ones are detected and gating stays off)."""

    gating_exclude_namespaces: list[NamespaceName] = Field(default_factory=lambda: ["kube-system"])
    """Pods of these namespaces are never gated."""

    preemption_min_runtime: float = Field(default=0.0, ge=0, le=WEEK)
    """Seconds a pod must have run (since its ``status.startTime``) before in-quota preemption
    may evict it to make room for a more important pod of its quota: other lower-priority pods
    make the room if they can, else the waiting pod waits until the young ones may go (KAI's
    ``preemptMinRuntime``). 0: every lower-priority pod may go, as in the reference. Revocation
    has its own (``revocation_min_runtime``)."""
