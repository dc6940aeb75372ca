"""The knobs of the computation: the reference's plugin arguments that change its results."""

from __future__ import annotations

from dataclasses import dataclass, field

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE, RESERVED_GROUP_MAX
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.userlimits.identity import DEFAULT_USER


def reference_reserved_max() -> ResourceList:
    """The reference's default max of the system and default quotas (cpu in cores)."""
    return {"cpu": RESERVED_GROUP_MAX * 1000, "memory": RESERVED_GROUP_MAX}


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Knobs of the computation (the reference's plugin arguments that affect it)."""

    scale_min_quota: bool = True
    reserved_namespace: str = DEFAULT_RESERVED_NAMESPACE
    system_quota_max: ResourceList = field(default_factory=reference_reserved_max)
    default_quota_max: ResourceList = field(default_factory=reference_reserved_max)
    #: Who a pod without a ``user-info`` annotation runs for, for the user and group limits.
    default_user: str = DEFAULT_USER
