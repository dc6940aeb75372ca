"""The revocation settings: when pods of a quota above its runtime are evicted, and how fast.

Revocation is how borrowed resources return without a custom scheduler: a quota that stays above
its runtime for ``revocation_delay`` loses pods (``controller.revocation``), checked every
``revocation_interval``, at most ``eviction_rate`` evictions per second across all quotas.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from elasticquota.settings.values import HOUR, WEEK


class RevocationSettings(BaseModel):
    """Eviction of the pods of over-used quotas."""

    revocation: bool = True
    """Evict pods of quotas that stay above their runtime (Koordinator: monitorAllQuotas, off
    by default there; on here: without a custom scheduler it is how borrowed resources return)."""

    revocation_delay: float = Field(default=120.0, ge=0, le=WEEK)
    """Seconds a quota may stay above its runtime before its pods are revoked."""

    revocation_around_budgets: bool = False
    """When a PodDisruptionBudget keeps a victim (its eviction answers 429), choose other pods of
    the quota in the same round instead, as Kubernetes' preemption reprieves such pods
    (Koordinator #2651). Off: the reference's rule, the kept pod is skipped and the quota stays
    above its runtime until a later round's eviction of it goes through."""

    revocation_min_runtime: float = Field(default=0.0, ge=0, le=WEEK)
    """Seconds a pod must have run (since its ``status.startTime``) before revocation may evict
    it: a round chooses other pods of the quota, and the next round comes when the first pod it
    spared may go (KAI's reclaim minimum runtime, Kueue KEP-9876). 0: every pod may go, as in
    the reference. In-quota preemption has its own (``preemption_min_runtime``)."""

    revoke_default_quota: bool = False
    """Also revoke pods of koordinator-default-quota (never those of the system quota)."""

    revocation_interval: float = Field(default=1.0, ge=0.01, le=HOUR)
    """Seconds between over-use checks (Koordinator: revokePodInterval)."""

    eviction_rate: float = Field(default=5.0, ge=0.01, le=1000)
    """At most this many evictions per second, across all quotas (fractions too: 0.2 is one
    eviction every 5 s; at least one every 100 s)."""
