"""In-quota preemption as the gate controller runs it: evictions that make room for a waiting pod.

The gate controller (``controller.enforcement.gating``) hands over each pod its round holds;
``core.decisions.preemption`` chooses the fewest strictly lower-priority pods of the same quota
whose eviction makes room, and this evicts them, at the eviction rate revocation shares, and says
so on each victim: ``PreemptedInQuota`` when evicted; a Warning ``PreemptionBlocked`` when a
PodDisruptionBudget keeps it (spared for ``BUDGET_RETRY`` seconds, others chosen instead where
they make room); a Warning ``PreemptionFailed`` naming the error and the waiting pod when the
eviction request failed. With a minimum runtime (``preemption_min_runtime``, or the quota's
``preemption-min-runtime`` annotation, else its nearest ancestor's) pods younger than it are not
chosen; a waiting pod that only they could make room for is told once per deferral, with an
Event ``PreemptionDeferred`` naming them and when the last may go, and a round after that
preempts.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.evictions import (
    RateLimiter,
    counted_eviction,
    pod_involved,
)
from elasticquota.controller.metrics.names import PREEMPTION
from elasticquota.core.decisions.gating import GateDecision
from elasticquota.core.decisions.minruntime import (
    MinRuntime,
    inherited_min_runtime,
    moment_text,
    of_preemption,
)
from elasticquota.core.decisions.preemption import (
    PreemptionMemo,
    deferred_by_min_runtime,
    preemption_victims,
)
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.results import Snapshot
from elasticquota.kube.errors import describe
from elasticquota.kube.evictions import EvictionOutcome, uid_of_failure
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)

#: How many recent victims are kept (for tests and debugging; the metrics count them all).
RECENT = 1000

#: Seconds a victim a PodDisruptionBudget kept is spared before its eviction is asked again (the
#: operator does not watch budgets: it learns from the 429). Every round (a second) asked it
#: again where no other set made room: a request refused each second for as long as the pod
#: waited, taken from the eviction rate revocation shares. Kubernetes' scheduler retries a pod
#: within its backoff, at most 10 s by default.
BUDGET_RETRY = 10.0


class InQuotaPreemption:
    """Evicts lower-priority pods of a waiting pod's quota to make room for it."""

    def __init__(
        self,
        context: LoopContext,
        limiter: RateLimiter,
        outage: OutageLog,
        clock: Callable[[], float],
    ) -> None:
        """``limiter``: the eviction budget shared with revocation; ``outage``: the gate's log of
        failed writes (an Event that cannot be posted goes there); ``clock``: wall-clock epoch
        seconds, what a pod's start time is compared with."""
        self._state = context.state
        self._cluster = context.cluster
        self._settings = context.settings
        self._metrics = context.metrics
        self._limiter = limiter
        self._outage = outage
        self._clock = clock
        self._evictions = OutageLog(logger, "in-quota preemption's evictions")
        #: The most recent victims evicted (bounded: the metrics count them all).
        self.preempted: collections.deque[str] = collections.deque(maxlen=RECENT)
        #: The candidates of the quotas with waiting pods, sorted once per change of their pods
        #: rather than once per waiting pod and round.
        self.candidates = PreemptionMemo()
        #: Victims a PodDisruptionBudget kept: key -> the loop time they may be asked again.
        self._kept: dict[str, float] = {}
        #: Waiting pods told that the minimum runtime defers their preemption: key -> until when.
        self._deferred: dict[str, float] = {}

    def keep_only(self, quotas: set[str], waiting: set[str]) -> None:
        """Forget the candidates of quotas without a waiting pod, and the deferrals told to pods
        that no longer wait."""
        self.candidates.keep_only(quotas)
        self._deferred = {pod: t for pod, t in self._deferred.items() if pod in waiting}

    def _answered(self) -> None:
        """An Event went through: the gate's outage, if any, is over."""
        self._outage.succeeded()

    async def preempt(
        self, snapshot: Snapshot, preempting: set[str], decision: GateDecision, uid: str
    ) -> None:
        """In-quota preemption: evict the fewest lower-priority pods that make room.

        Never for a pod a user or group limit holds: evicting pods makes room in the quota, not
        under the limit (YuniKorn's user-limit refusals never preempt either). The quota goes
        into ``preempting`` before the first eviction: a round makes one preemption per quota,
        even one an eviction error cut short (the round's snapshot does not know its victims
        are going; another pod of the quota would choose them again). A victim a
        PodDisruptionBudget keeps (429) is reprieved: the victims are chosen again without it
        (those already evicted are chosen again first, being less important, and not evicted
        twice), so the preemption stops only where no other set makes room; it stays spared for
        ``BUDGET_RETRY`` seconds, not asked again every round. A failed eviction
        ends the preemption: the victims are the fewest that make room together, so without
        that one the others' evictions would make none; the next round decides again. ``uid``: the
        waiting pod's, as its waiting condition's answer named it (for the deferral's Event)."""
        quota = snapshot.pod_quota[decision.pod.key]
        if quota in preempting or decision.verdict.limit_refusals:
            return
        kept = self._recently_kept()  # victims a budget kept, not to be asked again yet
        young = self._min_runtime(quota)
        done: set[str] = set()  # victims evicted (or gone already)
        while victims := preemption_victims(
            decision.seen, decision.pod, self.candidates, kept, young
        ):
            going = [victim for victim in victims if victim.key not in done]
            if not going:
                return
            preempting.add(quota)
            blocked = await self._evict_victims(quota, going, decision.pod, done)
            if blocked is None:
                return
            kept.add(blocked)
            self._kept[blocked] = asyncio.get_running_loop().time() + BUDGET_RETRY
        if victims is None and young.seconds and not done:
            await self._tell_deferral(decision, young, kept, uid)

    def _min_runtime(self, quota: str) -> MinRuntime:
        """The protection of ``quota``'s pods from in-quota preemption, as of now: its
        ``preemption-min-runtime`` annotation (or an ancestor's), else the setting."""
        setting = self._settings.preemption_min_runtime
        seconds = inherited_min_runtime(quota, self._state.engine.quota, setting, of_preemption)
        return MinRuntime(seconds, self._clock())

    async def _tell_deferral(
        self, decision: GateDecision, young: MinRuntime, kept: set[str], uid: str
    ) -> None:
        """Tell a waiting pod (once per deferral) that the pods that would make room for it
        are younger than their minimum runtime, and when the last of them may go."""
        pod = decision.pod
        deferral = deferred_by_min_runtime(decision.seen, pod, young, self.candidates, kept)
        if deferral is None or self._deferred.get(pod.key) == deferral.until:
            return
        names = ", ".join(victim.key for victim in deferral.young)
        message = (
            f"in-quota preemption waits for the minimum runtime ({young.seconds:g} s) of "
            f"{names}: they may go from {moment_text(deferral.until)}"
        )
        logger.info("%s: %s", pod.key, message)
        await self._cluster.post_event(
            pod_involved(pod, uid), "PreemptionDeferred", message, "Normal"
        )
        self._answered()
        self._deferred[pod.key] = deferral.until

    def _recently_kept(self) -> set[str]:
        """The victims a budget kept less than ``BUDGET_RETRY`` seconds ago (the others are
        forgotten: the memory holds what the last seconds' 429s named, no more)."""
        now = asyncio.get_running_loop().time()
        self._kept = {key: until for key, until in self._kept.items() if until > now}
        return set(self._kept)

    async def _evict_victims(
        self, quota: str, victims: list[PodInfo], waiting: PodInfo, done: set[str]
    ) -> str | None:
        """Evict ``victims`` in turn to make room for ``waiting``, adding each that went to
        ``done``. The key of the first a PodDisruptionBudget keeps (told so; the rest are left);
        None when all went, or when a failure ended the preemption."""
        logger.info("preempting %s for %s", ", ".join(v.key for v in victims), waiting.key)
        for victim in victims:
            await self._limiter.acquire()
            try:
                eviction = await counted_eviction(
                    self._cluster, self._metrics, quota, victim, PREEMPTION
                )
            except NotLeadingError:
                raise  # the round ends: no write of it can be sent any more
            except Exception as error:
                await self._preemption_failed(victim, waiting, error)
                return None
            self._evictions.succeeded()
            involved = pod_involved(victim, eviction.uid)
            if eviction.outcome is EvictionOutcome.BLOCKED:
                message = (
                    f"a PodDisruptionBudget refused the eviction to make room for {waiting.key}"
                )
                await self._tell_victim(victim, involved, "PreemptionBlocked", message)
                return victim.key
            done.add(victim.key)
            if eviction.outcome is EvictionOutcome.EVICTED:
                self.preempted.append(victim.key)
                message = f"evicted to make room in its quota for {waiting.key}"
                await self._tell_victim(victim, involved, "PreemptedInQuota", message)
        return None

    async def _preemption_failed(self, victim: PodInfo, waiting: PodInfo, error: Exception) -> None:
        """Say why ``victim`` stays, in the log and on the pod (naming its uid when the eviction
        read it, so that ``kubectl describe pod`` lists it)."""
        self._evictions.failed(f"{victim.key} (making room for {waiting.key})", error)
        message = f"the eviction to make room in its quota for {waiting.key} failed: "
        involved = pod_involved(victim, uid_of_failure(error))
        await self._tell_victim(victim, involved, "PreemptionFailed", message + describe(error))

    async def _tell_victim(
        self, victim: PodInfo, involved: dict[str, str], reason: str, message: str
    ) -> None:
        """Post an Event on a preemption's victim. One that fails is logged naming the victim
        and the Event (not the waiting pod the round was deciding about) and not tried again;
        the preemption goes on (as revocation does): stopping after a victim's eviction would
        leave its room unmade, the other victims being needed with it."""
        try:
            await self._cluster.post_event(involved, reason, message)
        except NotLeadingError:
            raise
        except Exception as error:
            self._outage.failed(f"the {reason} Event on {victim.key}", error)
            return
        self._answered()
