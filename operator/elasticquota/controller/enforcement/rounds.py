"""A revocation round's evictions: its victims evicted in turn, each only while still needed.

``RevocationController`` (``revocation``) decides when a quota is due a round and which pods its
victims are (``core.decisions.revocation.round_choice``); this part carries the round out. It
tells the quota (a ``QuotaOverUsed`` Event naming the victims and the pods spared for their
minimum runtime), then evicts the victims one at a time at the shared eviction rate: before each
one, on a solve at most ``RECHECK_INTERVAL`` old, it checks that the quota is still over-used and
the pod still among its victims (pods finish, runtimes grow, the earlier victims are known to be
going meanwhile). A PodDisruptionBudget's refusal leaves the pod; with
``revocation_around_budgets`` the rest are chosen again around it. Every eviction tells its pod
(``Revoked``, ``RevocationBlocked``, ``RevocationFailed``); a failed request or Event is logged as
an outage (``kube.outages``), not once per pod.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from elasticquota.controller.context import LoopContext, WritingLoop
from elasticquota.controller.enforcement.evictions import (
    RateLimiter,
    counted_eviction,
    pod_involved,
)
from elasticquota.controller.metrics.names import OVER_USE
from elasticquota.controller.solving import published_snapshot, solved_snapshot
from elasticquota.core.decisions.minruntime import MinRuntime
from elasticquota.core.decisions.revocation import victims_of
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.quantity import format_quantity
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.kube.errors import describe
from elasticquota.kube.evictions import EvictionOutcome, uid_of_failure
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)

#: Seconds between two fresh solves that check a round's next victim (``_recheck_snapshot``).
RECHECK_INTERVAL = 1.0

#: How many recent evicted pod keys a round keeps (for tests and debugging).
RECENT = 1000


def over_use_summary(result: QuotaResult) -> str:
    """``cpu used 40 > runtime 28571m`` for every over-used resource."""
    return ", ".join(
        f"{key} used {format_quantity(key, used)} > runtime "
        f"{format_quantity(key, result.runtime[key])}"
        for key, used in sorted(result.used.items())
        if key in result.runtime and used > result.runtime[key]
    )


class RoundEvictions(WritingLoop):
    """Carries out revocation rounds: the quota's Event, then its victims evicted in turn."""

    def __init__(
        self,
        context: LoopContext,
        limiter: RateLimiter,
        judge: Callable[[Snapshot, str], bool],
        min_runtime: Callable[[str, float | None], MinRuntime],
    ) -> None:
        """``limiter``: the eviction budget shared with in-quota preemption; ``judge``: whether
        a quota of a snapshot still needs pods gone; ``min_runtime``: a quota's protection of
        young pods as of a time (None: now)."""
        super().__init__(context)
        self._limiter = limiter
        self._judge = judge
        self._min_runtime = min_runtime
        #: When a victim's eviction last solved afresh (``_recheck_snapshot``; the loop's time).
        self._rechecked_at: float | None = None
        #: One outage log per kind of request: an Event that tells of a failed eviction is sent
        #: all the same; one log for both would end in the log an outage that goes on.
        self._events = OutageLog(logger, "revocation's Events")
        self._evictions = OutageLog(logger, "revocation's evictions")
        #: The most recent evictions (bounded: ``elastic_quota_evictions_total`` counts them all).
        self.evicted: collections.deque[str] = collections.deque(maxlen=RECENT)

    async def revoke(self, result: QuotaResult, victims: list[PodInfo], spared: str) -> None:
        """Tell the quota its round (an Event naming the victims and the pods ``spared``), then
        evict the victims in turn; the round ends where the Lease is lost."""
        summary = over_use_summary(result)
        names = ", ".join(pod.key for pod in victims) or "none evictable"
        message = (
            f"over its runtime for more than {self._settings.revocation_delay:g}s ({summary}); "
            f"evicting: {names}{spared}"
        )
        logger.warning("quota %s: %s", result.name, message)
        await self._event_on_quota(result, "QuotaOverUsed", message)
        try:
            await self._evict_in_turn(result, victims, summary)
        except NotLeadingError:
            logger.info("quota %s: revocation round stopped: the Lease was lost", result.name)

    async def _evict_in_turn(
        self, result: QuotaResult, victims: list[PodInfo], summary: str
    ) -> None:
        """Evict ``victims`` in turn, each only while the quota still needs it gone, none twice.
        With ``revocation_around_budgets`` a victim a PodDisruptionBudget keeps is reprieved:
        the rest are chosen again around it (``_chosen_again``)."""
        kept: set[str] = set()
        sent: set[str] = set()
        pending = list(victims)
        while pending:
            pod = pending.pop(0)
            await self._limiter.acquire()
            if not await self._still_a_victim(result.name, pod, kept):
                continue
            sent.add(pod.key)
            outcome = await self._evict(pod, result, summary)
            if outcome is EvictionOutcome.BLOCKED and self._settings.revocation_around_budgets:
                kept.add(pod.key)
                pending = await self._chosen_again(result.name, kept, sent)

    async def _chosen_again(self, quota: str, kept: set[str], sent: set[str]) -> list[PodInfo]:
        """The victims without those of ``kept``, the ones already ``sent`` left out: those
        evicted are chosen again first while they run (less important than the rest), and make
        the room they are making."""
        fresh = await self._recheck_snapshot()
        if quota not in fresh.quotas:
            return []
        chosen = victims_of(fresh, quota, kept, self._min_runtime(quota, None))
        return [pod for pod in chosen if pod.key not in sent]

    async def _still_a_victim(self, quota: str, pod: PodInfo, kept: set[str]) -> bool:
        """Whether the quota still needs ``pod`` gone, on a fresh solve: the evictions of a round
        are paced (``eviction_rate``), and meanwhile pods finish, runtimes grow, the round's
        earlier victims are known to be going. Chosen around those a budget ``kept`` (keys)."""
        fresh = await self._recheck_snapshot()
        if quota not in fresh.quotas or not self._judge(fresh, quota):
            return False
        return any(
            (victim.key, victim.created) == (pod.key, pod.created)
            for victim in victims_of(fresh, quota, kept, self._min_runtime(quota, None))
        )

    async def _recheck_snapshot(self) -> Snapshot:
        """A fresh solve at most every ``RECHECK_INTERVAL`` seconds, else the state as last
        solved (that solve, or a tree loop's since): evictions come ``eviction_rate`` a second,
        and during a burst each solve of a big tree turns all its rows into new results."""
        now = asyncio.get_running_loop().time()
        if self._rechecked_at is not None and now - self._rechecked_at < RECHECK_INTERVAL:
            return await published_snapshot(self._state.engine, self._metrics)
        self._rechecked_at = now
        return await solved_snapshot(self._state.engine, self._metrics)

    async def _evict(
        self, pod: PodInfo, result: QuotaResult, summary: str
    ) -> EvictionOutcome | None:
        """Evict ``pod`` and tell it so; its outcome (None: the request failed)."""
        try:
            eviction = await counted_eviction(
                self._cluster, self._metrics, result.name, pod, OVER_USE
            )
        except NotLeadingError:
            raise  # the round ends: no write of it can be sent any more
        except Exception as error:
            self._evictions.failed(f"the eviction of {pod.key}", error)
            uid = uid_of_failure(error)  # when the pod was read before the request failed
            message = f"the eviction for quota {result.name}'s over-use failed: {describe(error)}"
            await self._event_on_pod(pod, uid, "RevocationFailed", message)
            return None
        self._evictions.succeeded()
        if eviction.outcome is EvictionOutcome.EVICTED:
            self.evicted.append(pod.key)
            message = f"evicted: quota {result.name} is over its runtime ({summary})"
            await self._event_on_pod(pod, eviction.uid, "Revoked", message)
        elif eviction.outcome is EvictionOutcome.BLOCKED:
            instead = (
                "other pods of the quota are chosen instead"
                if self._settings.revocation_around_budgets
                else "the next round tries again"
            )
            message = (
                f"a PodDisruptionBudget refused the eviction for quota {result.name}'s over-use; "
                f"{instead}"
            )
            await self._event_on_pod(pod, eviction.uid, "RevocationBlocked", message)
        return eviction.outcome

    async def _event_on_pod(self, pod: PodInfo, uid: str, reason: str, message: str) -> None:
        """An Event about ``pod``, naming its ``uid`` when the eviction read it."""
        await self._event(pod_involved(pod, uid), reason, message)

    async def _event_on_quota(self, result: QuotaResult, reason: str, message: str) -> None:
        quota = self._state.quotas.get((result.namespace, result.name))
        if quota is not None:
            await self._event(quota.involved(), reason, message)

    async def _event(self, involved: dict[str, str], reason: str, message: str) -> None:
        try:
            await self._cluster.post_event(involved, reason, message)
        except Exception as error:
            about = f"{involved['namespace']}/{involved['name']}"
            self._events.failed(f"the {reason} Event on {about}", error)
            return
        self._events.succeeded()
