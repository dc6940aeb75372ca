"""Admission gating without a custom scheduler: which gated pods may go now, and in which order.

New pods of managed quotas carry the scheduling gate ``elasticquota.dev/admission``; the scheduler
ignores them until it is removed. A gated pod is released when it fits its quota (the PreFilter
check of ``admission``) and every user and group limit on its path still holds with it
(``core.userlimits``), highest priority first, then oldest. Pods released but not bound yet
(pending, no gate), and those released earlier in the same round, are counted as if they already
used their request: in their quota's used (and each ancestor's, when ancestors are checked), in its
non-preemptible used when they are not preemptible (the ``min`` check), and in their user's and
group's usage, so that releasing several pods that each fit alone never overshoots the runtime, the
min nor a user or group limit together (the reference's Reserve counts a pod before the next one's
PreFilter). Pods of reserved quotas are never held back.

``pending_verdicts`` (what ``plan`` shows, and ``explain`` for one pod) judges every pending pod as
the operator would: a gated pod by the gate's decision, a pod the gate released (its condition
``ElasticQuotaAdmission`` True) as waiting for the scheduler, any other by the admission check.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Collection, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, cast

from elasticquota.core.decisions.admission import Verdict, check_pod
from elasticquota.core.keys import ADMISSION_GATE, RESERVED_QUOTAS
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import ResourceList, add, mask
from elasticquota.core.solve.results import QuotaResult, Snapshot


@dataclass(frozen=True, slots=True)
class GateDecision:
    """Release the pod (True) or keep it gated, with the verdict that says why."""

    pod: PodInfo
    release: bool
    verdict: Verdict
    #: The snapshot as the check saw it: released pods not bound yet counted as used (what
    #: in-quota preemption has to make room against).
    seen: Snapshot = field(compare=False, repr=False)


def gates_with_admission(
    pod: Mapping[str, Any], quota: str, excluded_namespaces: Collection[str]
) -> list[dict[str, Any]] | None:
    """A new pod's scheduling gates with ours added, or None when it is not to be held back.

    Not gated: pods of excluded namespaces (kube-system by default), pods of the reserved quotas
    (the system and default quotas are not limited; unmanaged pods go straight through), pods bound
    already (``nodeName`` set: the API refuses gates on them), pods that carry the gate already.
    """
    metadata = pod.get("metadata") if isinstance(pod.get("metadata"), Mapping) else {}
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(metadata, Mapping) and isinstance(spec, Mapping)
    if metadata.get("namespace") in excluded_namespaces or quota in RESERVED_QUOTAS:
        return None
    if spec.get("nodeName"):
        return None
    gates = [dict(gate) for gate in spec.get("schedulingGates") or [] if isinstance(gate, Mapping)]
    if any(gate.get("name") == ADMISSION_GATE for gate in gates):
        return None
    return [*gates, {"name": ADMISSION_GATE}]


def gate_wait(pod: PodInfo, now: float) -> float | None:
    """Seconds ``pod`` has waited at the gate by ``now`` (epoch seconds), None when unknown.

    The gate is added when the pod is created (the mutating webhook; the API refuses new gates on
    an existing pod), so the wait starts at ``metadata.creationTimestamp``: it needs no memory of
    ours and survives a restart of the operator. A clock behind the API server's gives 0, not less.
    """
    if not pod.created:
        return None
    try:
        created = datetime.fromisoformat(pod.created.replace("Z", "+00:00"))
    except ValueError:
        return None
    if created.tzinfo is None:
        return None
    return max(0.0, now - created.timestamp())


def is_gated(pod: PodInfo) -> bool:
    return ADMISSION_GATE in pod.scheduling_gates and pod.counts_in_request and not pod.node_name


def _is_in_flight(pod: PodInfo) -> bool:
    """Released (no gate) but not bound yet: it will use its request soon."""
    return pod.counts_in_request and not pod.node_name and not pod.scheduling_gates


@dataclass(slots=True)
class _Released:
    """What the released pods that are not bound yet add to the figures the check reads."""

    snapshot: Snapshot
    check_ancestors: bool
    #: Per quota: requests (masked to the pod's quota's max) added to its used.
    used: dict[str, ResourceList] = field(default_factory=dict)
    #: Per quota: requests of its non-preemptible pods, added to its non-preemptible used.
    non_preemptible: dict[str, ResourceList] = field(default_factory=dict)

    def add(self, pod: PodInfo, quota: str) -> None:
        request = mask(pod.requests, self.snapshot.quotas[quota].max)
        for level in self._levels(quota):
            self.used[level] = add(self.used.get(level, {}), request)
        if not pod.preemptible:
            self.non_preemptible[quota] = add(self.non_preemptible.get(quota, {}), request)

    def view(self, quota: str) -> Snapshot:
        """The snapshot with the released pods counted at ``quota`` and the levels checked
        above it. An overlay, not a copy of every quota's result per gated pod."""
        changed: dict[str, QuotaResult] = {}
        for level in self._levels(quota):
            used, held = self.used.get(level), self.non_preemptible.get(level)
            if used or held:
                result = self.snapshot.quotas[level]
                changed[level] = replace(
                    result,
                    used=add(result.used, used or {}),
                    non_preemptible_used=add(result.non_preemptible_used, held or {}),
                )
        if not changed:
            return self.snapshot
        others = cast(MutableMapping[str, QuotaResult], self.snapshot.quotas)
        return replace(self.snapshot, quotas=ChainMap(changed, others))

    def _levels(self, quota: str) -> list[str]:
        if not self.check_ancestors:
            return [quota]
        return [quota, *self.snapshot.ancestors(quota)]


def admission_order(pods: Iterable[PodInfo]) -> list[PodInfo]:
    """Highest priority first, then oldest (creation time), then by key."""
    return sorted(pods, key=lambda pod: (-pod.priority, pod.created or "~", pod.key))


def gate_decisions(
    snapshot: Snapshot,
    check_ancestors: bool = False,
    released_unseen: Mapping[str, str] | None = None,
) -> list[GateDecision]:
    """One decision per gated pod, in admission order.

    ``released_unseen``: pods the caller has released whose release the snapshot may not show yet
    (key -> creation time: the watch brings the ungated pod after the patch's answer). Such a pod
    that still shows the gate counts as released, not bound yet, and gets no decision."""
    unseen = released_unseen or {}
    users = snapshot.user_limits.overlay() if snapshot.user_limits.limited else None
    released = _Released(snapshot, check_ancestors)
    waiting = []
    for pod in snapshot.unbound_pods().values():  # gated and released pods are not bound
        if is_gated(pod) and unseen.get(pod.key) != pod.created:
            waiting.append(pod)
        elif (is_gated(pod) or _is_in_flight(pod)) and pod.key in snapshot.pod_quota:
            released.add(pod, snapshot.pod_quota[pod.key])
            if users is not None:
                users.add(pod, snapshot.pod_quota[pod.key])
    decisions = []
    for pod in admission_order(waiting):
        quota = snapshot.pod_quota[pod.key]
        view = released.view(quota)
        verdict = check_pod(view, pod, check_ancestors, users)
        if verdict.admitted:
            released.add(pod, quota)
            if users is not None:
                users.add(pod, quota)
        decisions.append(GateDecision(pod, verdict.admitted, verdict, view))
    return decisions


def decisions_by_pod(snapshot: Snapshot, check_ancestors: bool = False) -> dict[str, GateDecision]:
    """``gate_decisions`` by pod key."""
    return {decision.pod.key: decision for decision in gate_decisions(snapshot, check_ancestors)}


#: The verdict on a pod the gate has released that is not bound yet.
RELEASED_REASON = "released by the admission gate; waiting for the scheduler to bind it"


def is_released(pod: PodInfo, released: Collection[str]) -> bool:
    """The gate has released ``pod`` (its key is in ``released``: the pods whose
    ``ElasticQuotaAdmission`` condition is True, which callers read from the raw objects) and it is
    not bound yet: the scheduler has it, not its quota."""
    return pod.key in released and _is_in_flight(pod)


def pending_verdict(
    snapshot: Snapshot,
    pod: PodInfo,
    check_ancestors: bool,
    decisions: Mapping[str, GateDecision],
    released: Collection[str] = (),
) -> tuple[Verdict, Snapshot]:
    """The verdict on one pending pod and the figures it was reached on: a gated pod's is the
    gate's decision (``decisions``: ``gate_decisions`` by pod key), a pod the gate released is
    admitted and waits for the scheduler, any other pod gets the admission check on ``snapshot``."""
    decision = decisions.get(pod.key)
    if decision is not None:
        return decision.verdict, decision.seen
    if is_released(pod, released):
        quota = snapshot.pod_quota[pod.key]
        return Verdict(pod.key, quota, True, RELEASED_REASON, released=True), snapshot
    return check_pod(snapshot, pod, check_ancestors), snapshot


def pending_verdicts(
    snapshot: Snapshot,
    check_ancestors: bool = False,
    released: Collection[str] = (),
    decided: Sequence[GateDecision] | None = None,
) -> list[Verdict]:
    """A verdict for every pending pod (live, not bound to a node), sorted by pod key, each as
    ``pending_verdict`` gives it: gated pods as the gate decides them (``decided``: the gate's
    decisions on ``snapshot`` where the caller has made them; else made here)."""
    if decided is None:
        decided = gate_decisions(snapshot, check_ancestors)
    decisions = {decision.pod.key: decision for decision in decided}
    return [
        pending_verdict(snapshot, pod, check_ancestors, decisions, released)[0]
        for key, pod in sorted(snapshot.pods.items())
        if key in snapshot.pod_quota and pod.counts_in_request and not pod.is_assigned
    ]
