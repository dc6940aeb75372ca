"""Admission gating: gated pods are released when they fit their quota, in priority order.

On API servers with pod scheduling gates (Kubernetes 1.27+), every ``reconcile_interval`` the active
replica decides for every gated pod (``core.decisions.gating``): pods that fit lose the gate
``elasticquota.dev/admission`` (and get the condition ``ElasticQuotaAdmission=True``); pods that do
not keep it, with the condition ``ElasticQuotaAdmission=False`` and an Event naming the quota, the
resource and the numbers (written again only when the reason changes). A waiting pod that would fit
if strictly lower-priority pods of its own quota were gone has the fewest of them evicted (in-quota
preemption, ``core.decisions.preemption``; one quota at a time, rate-limited like revocation; at
most one preemption per quota per round, one an eviction error cut short included), unless a user
or group limit holds it too (evictions would not lift the limit). Each victim gets an Event: one
evicted ``PreemptedInQuota``; one a PodDisruptionBudget kept a Warning ``PreemptionBlocked``
(spared for ``BUDGET_RETRY`` seconds, others chosen instead where they make room); one whose
eviction request failed (an API error, not a budget's refusal nor a pod gone) a Warning
``PreemptionFailed`` naming the error and the pod it was making room for, and the failure is
logged so too; a failure repeated every round is one Event whose count grows (``kube.events``).
A pod held by a user limit is checked again every round, so it is released once pods of its user
finish or are deleted.
On older API servers, which drop the field, this is detected once, logged, and the operator runs
revocation only.

Metrics: each round leaves the number of pods still held per quota and reason in
``ControllerState.gated`` (``held_reason``: a user limit, a group limit, or the quota itself);
every release counts as ``admitted``, and its wait at the gate (from the pod's creation, when the
gate was added, so a restart loses nothing) goes into the admission-wait histogram by tree and
quota; every preemption eviction counts with reason ``preemption`` by its outcome.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from elasticquota.controller.context import LoopContext, WritingLoop
from elasticquota.controller.enforcement.evictions import (
    RateLimiter,
    counted_eviction,
    pod_involved,
)
from elasticquota.controller.metrics.names import (
    HELD_BY_GROUP_LIMIT,
    HELD_BY_QUOTA,
    HELD_BY_USER_LIMIT,
    PREEMPTION,
)
from elasticquota.controller.solving import solved_snapshot
from elasticquota.core.decisions.admission import Verdict
from elasticquota.core.decisions.gating import GateDecision, gate_decisions, gate_wait, is_gated
from elasticquota.core.decisions.preemption import PreemptionMemo, preemption_victims
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.results import Snapshot
from elasticquota.kube.errors import describe
from elasticquota.kube.evictions import EvictionOutcome, uid_of_failure
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)

#: How many recent pod keys a controller keeps of what it did (for tests and debugging).
RECENT = 1000

#: Seconds a victim a PodDisruptionBudget kept is spared before its eviction is asked again (the
#: operator does not watch budgets: it learns from the 429). Every round (a second) asked it
#: again where no other set made room: a request refused each second for as long as the pod
#: waited, taken from the eviction rate revocation shares. Kubernetes' scheduler retries a pod
#: within its backoff, at most 10 s by default.
BUDGET_RETRY = 10.0


def held_reason(verdict: Verdict) -> str:
    """Why a pod is held, for the gated-pods gauge: ``user-limit`` when a user limit refuses it,
    else ``group-limit`` when a group limit does, else ``quota`` (its quota has no room). A pod
    held by a limit and its quota at once counts for the limit: the limit is what its user can
    act on, and what the alert on user limits watches."""
    kinds = {refusal.kind for refusal in verdict.limit_refusals}
    if "user" in kinds:
        return HELD_BY_USER_LIMIT
    if "group" in kinds:
        return HELD_BY_GROUP_LIMIT
    return HELD_BY_QUOTA


def held_per_quota(snapshot: Snapshot, decisions: list[GateDecision]) -> dict[tuple[str, str], int]:
    """How many gated pods each quota keeps waiting, per reason (the gated-pods gauge)."""
    return dict(
        Counter(
            (snapshot.pod_quota[d.pod.key], held_reason(d.verdict))
            for d in decisions
            if not d.release
        )
    )


def _still_unseen(snapshot: Snapshot, unseen: dict[str, str]) -> dict[str, str]:
    """The released pods that memory still shows gated: the watch brings a released pod after
    the patch's answer, maybe after the next round's snapshot. Until then the pod counts as
    released, not bound yet (``gate_decisions``): it must not be decided about again."""
    return {
        key: created
        for key, created in unseen.items()
        if (pod := snapshot.pods.get(key)) is not None and pod.created == created and is_gated(pod)
    }


class GateController(WritingLoop):
    """Releases gated pods that fit; tells the others why they wait."""

    def __init__(
        self,
        context: LoopContext,
        limiter: RateLimiter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``limiter`` is shared with revocation (one eviction budget); ``clock``: wall-clock
        epoch seconds, what a pod's creation time is compared with (its wait at the gate)."""
        super().__init__(context)
        self._clock = clock
        self._told: dict[str, str] = {}  # pod -> the reason it was last told it waits
        self._limiter = limiter or RateLimiter(context.settings.eviction_rate)
        self._outage = OutageLog(logger, "gate updates")
        self._evictions = OutageLog(logger, "in-quota preemption's evictions")
        #: The most recent releases and in-quota preemptions (bounded: the metrics count them all).
        self.released: collections.deque[str] = collections.deque(maxlen=RECENT)
        self.preempted: collections.deque[str] = collections.deque(maxlen=RECENT)
        #: Pods released whose release memory has not shown yet (key -> creation time).
        self._unseen: dict[str, str] = {}
        #: Released pods whose "admitted" condition is still to be written (key -> creation time
        #: and reason): written again each round until it lands or the pod is gone, so that no
        #: pod keeps the "waits" condition of its last hold once it runs.
        self._owed: dict[str, tuple[str, str]] = {}
        #: The preemption candidates of the quotas with waiting pods, sorted once per change of
        #: their pods rather than once per waiting pod and round.
        self._candidates = PreemptionMemo()
        #: Victims a PodDisruptionBudget kept: key -> the loop time they may be asked again.
        self._kept: dict[str, float] = {}

    async def run(self) -> None:
        await self._state.synced.wait()
        while True:
            await self._leading.wait()
            await self.step()
            await asyncio.sleep(self._settings.reconcile_interval)

    async def step(self) -> None:
        """One round over every gated pod: the releases and the waiting pods' conditions first,
        in admission order, then the in-quota preemptions. An eviction waits for the eviction
        rate, so a release sent after one would go out on figures older by that wait (meanwhile
        the quota may have stopped having room); the decisions are the same either way."""
        snapshot = await solved_snapshot(self._state.engine, self._metrics)
        self._unseen = _still_unseen(snapshot, self._unseen)
        decisions = gate_decisions(snapshot, released_unseen=self._unseen)
        held = [decision for decision in decisions if not decision.release]
        self._candidates.keep_only({snapshot.pod_quota[d.pod.key] for d in held})
        preempting: set[str] = set()  # at most one preemption per quota per round
        if not (
            await self._write_owed_conditions(snapshot)
            and await self._each(decisions, functools.partial(self._release_or_hold, snapshot))
            and await self._each(held, functools.partial(self._preempt, snapshot, preempting))
        ):
            return  # the Lease was lost: no write of this round can be sent any more
        self._state.gated = held_per_quota(snapshot, decisions)
        waiting = {decision.pod.key for decision in decisions}
        self._told = {pod: reason for pod, reason in self._told.items() if pod in waiting}

    async def _each(
        self, decisions: list[GateDecision], act: Callable[[GateDecision], Awaitable[None]]
    ) -> bool:
        """``act`` on each decision in turn; one that fails is logged and tried again at the next
        round. False when the Lease was lost (the rest of the round is not sent). The outage ends
        in the log where a request goes through (``_answered``), not with every decision: most
        send nothing (a pod already told, a quota with no victims)."""
        for decision in decisions:
            try:
                await act(decision)
            except NotLeadingError:
                return False
            except Exception as error:  # tried again at the next round
                self._outage.failed(decision.pod.key, error)
        return True

    def _answered(self) -> None:
        """A gate update went through: the outage, if any, is over."""
        self._outage.succeeded()

    async def _release_or_hold(self, snapshot: Snapshot, decision: GateDecision) -> None:
        """Release a pod that fits; tell one that waits why (once per reason)."""
        quota = snapshot.pod_quota[decision.pod.key]
        if decision.release:
            await self._release(decision, snapshot.quotas[quota].tree, quota)
        else:
            await self._hold(decision)

    async def _release(self, decision: GateDecision, tree: str, quota: str) -> None:
        """Remove the gate, count the admission, then say so on the pod. Counted as soon as the
        gate is gone: a condition that cannot be written (an error, the Lease lost) undoes no
        release, and the next round has no decision about the pod to count it by."""
        pod = decision.pod
        logger.info("releasing %s: %s", pod.key, decision.verdict.reason)
        remaining = [gate for gate in pod.scheduling_gates if gate != ADMISSION_GATE]
        if not await self._cluster.set_scheduling_gates(
            pod.namespace, pod.name, remaining, created=pod.created
        ):
            return  # not sent (a dry run), or another pod has the name: nothing released
        self._answered()
        self.released.append(pod.key)
        self._unseen[pod.key] = pod.created
        self._metrics.admitted(quota)
        waited = gate_wait(pod, self._clock())
        if waited is not None:
            self._metrics.admission_waited(tree, quota, waited)
        self._owed[pod.key] = (pod.created, decision.verdict.reason)
        await self._admitted_condition(pod, decision.verdict.reason)

    async def _admitted_condition(self, pod: PodInfo, reason: str) -> None:
        """Say on the released pod that it was admitted, and why; owed until it is written."""
        await self._cluster.set_waiting_condition(
            pod.namespace, pod.name, False, reason, created=pod.created
        )
        self._answered()
        self._owed.pop(pod.key, None)  # written, or another pod has the name: nothing owed

    async def _write_owed_conditions(self, snapshot: Snapshot) -> bool:
        """The conditions earlier rounds could not write, tried again first (a pod gone or
        recreated under its name is owed nothing). False when the Lease was lost."""
        for key, (created, reason) in list(self._owed.items()):
            pod = snapshot.pods.get(key)
            if pod is None or pod.created != created:
                del self._owed[key]
                continue
            try:
                await self._admitted_condition(pod, reason)
            except NotLeadingError:
                return False
            except Exception as error:  # tried again at the next round
                self._outage.failed(key, error)
        return True

    async def _preempt(
        self, snapshot: Snapshot, preempting: set[str], decision: GateDecision
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
        that one the others' evictions would make none; the next round decides again."""
        quota = snapshot.pod_quota[decision.pod.key]
        if quota in preempting or decision.verdict.limit_refusals:
            return
        kept = self._recently_kept()  # victims a budget kept, not to be asked again yet
        done: set[str] = set()  # victims evicted (or gone already)
        while victims := preemption_victims(decision.seen, decision.pod, self._candidates, kept):
            going = [victim for victim in victims if victim.key not in done]
            if not going:
                return
            preempting.add(quota)
            blocked = await self._evict_victims(quota, going, decision.pod, done)
            if blocked is None:
                return
            kept.add(blocked)
            self._kept[blocked] = asyncio.get_running_loop().time() + BUDGET_RETRY

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

    async def _hold(self, decision: GateDecision) -> None:
        pod, reason = decision.pod, decision.verdict.reason
        if self._told.get(pod.key) == reason:
            return
        uid = await self._cluster.set_waiting_condition(
            pod.namespace, pod.name, True, reason, created=pod.created
        )
        self._answered()
        if uid is None:
            return  # another pod has the name now: the round that sees it decides about it
        await self._cluster.post_event(pod_involved(pod, uid), "WaitingForQuota", reason, "Normal")
        self._answered()
        self._told[pod.key] = reason
