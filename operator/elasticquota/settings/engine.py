"""The engine settings: what the solve takes into account and how often it runs.

The namespace of the reserved quotas (root, system, default), the namespaces whose pods are not
accounted, whether mins are scaled down when they do not fit (Koordinator's rule), how often each
tree is solved and written, how long a node or profile change waits before profile roots are
recomputed, and where the precompiled solver kernels come from.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE
from elasticquota.settings.values import HOUR, FilePath, NamespaceName


class EngineSettings(BaseModel):
    """The quota trees' solve: its inputs and its pace."""

    reserved_namespace: NamespaceName = DEFAULT_RESERVED_NAMESPACE
    """Namespace of the reserved quotas (root, system, default), created at start-up if missing."""

    ignore_namespaces: list[NamespaceName] = Field(default_factory=list)
    """Pods in these namespaces are not accounted at all."""

    scale_min_quota: bool = True
    """Scale mins down when a level's available amount is below their sum (Koordinator default)."""

    reconcile_interval: float = Field(default=1.0, ge=0.01, le=HOUR)
    """Seconds: each tree is solved and written at most once per interval (so at most one write
    per quota per interval)."""

    profile_debounce: float = Field(default=1.0, ge=0, le=HOUR)
    """Seconds to wait after a node or profile change before recomputing profile root quotas
    (the reference polls every 10 s instead)."""

    numba_cache_seed: FilePath | None = None
    """Directory of a precompiled numba cache (the image ships one), copied at start-up into
    ``NUMBA_CACHE_DIR`` when that holds no cache yet, so that the solver kernel is loaded instead
    of compiled (``elasticquota.numbacache``); unset or missing: nothing is copied."""
