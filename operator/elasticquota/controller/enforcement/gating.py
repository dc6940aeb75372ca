"""Admission gating: gated pods are released when they fit their quota, in priority order.

On API servers with pod scheduling gates (Kubernetes 1.27+), every ``reconcile_interval`` the active
replica decides for every gated pod (``core.decisions.gating``): pods that fit lose the gate
``elasticquota.dev/admission`` (and get the condition ``ElasticQuotaAdmission=True``); pods that do
not keep it, with the condition ``ElasticQuotaAdmission=False`` and an Event naming the quota, the
resource and the numbers (written again only when the reason changes). A waiting pod that would fit
if strictly lower-priority pods of its own quota were gone has the fewest of them evicted (in-quota
preemption: ``controller.enforcement.preemption``; at most one preemption per quota per round),
unless a user or group limit holds it too (evictions would not lift the limit).
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
from elasticquota.controller.enforcement.evictions import RateLimiter, pod_involved
from elasticquota.controller.enforcement.preemption import RECENT, InQuotaPreemption
from elasticquota.controller.metrics.names import (
    HELD_BY_GROUP_LIMIT,
    HELD_BY_QUOTA,
    HELD_BY_USER_LIMIT,
)
from elasticquota.controller.solving import solved_snapshot
from elasticquota.core.decisions.admission import Verdict
from elasticquota.core.decisions.gating import GateDecision, gate_decisions, gate_wait, is_gated
from elasticquota.core.keys import ADMISSION_GATE
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.results import Snapshot
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)


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
        #: pod -> the reason it was last told it waits, and its uid as that answer named it.
        self._told: dict[str, tuple[str, str]] = {}
        self._limiter = limiter or RateLimiter(context.settings.eviction_rate)
        self._outage = OutageLog(logger, "gate updates")
        self._preemption = InQuotaPreemption(context, self._limiter, self._outage, clock)
        #: The most recent releases (bounded: the metrics count them all).
        self.released: collections.deque[str] = collections.deque(maxlen=RECENT)
        #: Pods released whose release memory has not shown yet (key -> creation time).
        self._unseen: dict[str, str] = {}
        #: Released pods whose "admitted" condition is still to be written (key -> creation time
        #: and reason): written again each round until it lands or the pod is gone, so that no
        #: pod keeps the "waits" condition of its last hold once it runs.
        self._owed: dict[str, tuple[str, str]] = {}

    @property
    def preempted(self) -> collections.deque[str]:
        """The most recent in-quota preemption victims evicted (bounded)."""
        return self._preemption.preempted

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
        waiting = {decision.pod.key for decision in decisions}
        self._preemption.keep_only({snapshot.pod_quota[d.pod.key] for d in held}, waiting)
        preempting: set[str] = set()  # at most one preemption per quota per round
        if not (
            await self._write_owed_conditions(snapshot)
            and await self._each(decisions, functools.partial(self._release_or_hold, snapshot))
            and await self._each(held, functools.partial(self._preempt, snapshot, preempting))
        ):
            return  # the Lease was lost: no write of this round can be sent any more
        self._state.gated = held_per_quota(snapshot, decisions)
        self._told = {pod: told for pod, told in self._told.items() if pod in waiting}

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
        """In-quota preemption for a held pod (``InQuotaPreemption.preempt``)."""
        uid = self._told.get(decision.pod.key, ("", ""))[1]
        await self._preemption.preempt(snapshot, preempting, decision, uid)

    async def _hold(self, decision: GateDecision) -> None:
        pod, reason = decision.pod, decision.verdict.reason
        if self._told.get(pod.key, ("", ""))[0] == reason:
            return
        uid = await self._cluster.set_waiting_condition(
            pod.namespace, pod.name, True, reason, created=pod.created
        )
        self._answered()
        if uid is None:
            return  # another pod has the name now: the round that sees it decides about it
        await self._cluster.post_event(pod_involved(pod, uid), "WaitingForQuota", reason, "Normal")
        self._answered()
        self._told[pod.key] = (reason, uid)
