"""Why a pod waits, or would be revoked: its quota, the path to the root, and what blocks it.

For a pending pod: each level from its quota up to the top, with runtime / used / request for the
pod's resources; the admission verdict (``admission``) and, when blocked, how much would have
to be freed or added at the blocking level. A pod at the admission gate gets the gate's own
decision (``gating.gate_decisions``): the pods released but not bound yet, and those the same
round releases before it (higher priority, then older), count in the used it is checked and shown
against, so "fits now" is a pod the gate releases and "waits" one it holds, for the same reason.
A pod the gate has released (its ``ElasticQuotaAdmission`` condition True, read from the raw pod
by the caller) that is not bound yet waits for the scheduler, not for its quota, and is said so.
A pod held by a user or group limit (``core.userlimits``) gets a ``held by`` line per limit
(whose, which limit object, at which quota, on what) and advice with the numbers: the usage the
subject must drop to, or the value the limit must be raised to (or, for applications, that one of
the running ones must stop).

A pod the gate holds for its quota (not for a limit) gets a ``preemption`` line: the pods of
its quota the next gate round evicts to make room for it (in-quota preemption, as the operator
chooses them: ``core.decisions.preemption``), or the young pods whose minimum runtime it waits
for and until when (``preemption_min_runtimes``); none where preemption cannot make room.

For a running pod of a quota above its runtime: whether the next revocation round would evict it
(``core.decisions.revocation.round_choice``, as the operator decides it).

A ``kept by a budget`` line names each pod the verdict or the preemption line says is evicted
whose eviction a PodDisruptionBudget would refuse now (``core.decisions.budgets``), and what the
operator then does. Pure: it reads a solved ``Snapshot``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from elasticquota.core.decisions.admission import Shortfall, Verdict
from elasticquota.core.decisions.budgets import NO_BUDGETS, PodBudgets, refused_evictions
from elasticquota.core.decisions.gating import decisions_by_pod, is_gated, pending_verdict
from elasticquota.core.decisions.minruntime import (
    NO_MIN_RUNTIMES,
    MinRuntime,
    MinRuntimes,
    moment_text,
)
from elasticquota.core.decisions.preemption import deferred_by_min_runtime, preemption_victims
from elasticquota.core.decisions.revocation import quota_is_over_used, round_choice
from elasticquota.core.keys import DEFAULT_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.quantity import format_quantity
from elasticquota.core.quantities.resources import mask
from elasticquota.core.solve.results import Snapshot, is_over_used
from elasticquota.core.userlimits import APPLICATIONS, LimitRefusal


@dataclass(frozen=True, slots=True)
class Level:
    """One quota on the pod's path, restricted to the pod's resources."""

    quota: str
    runtime: dict[str, int]
    used: dict[str, int]
    request: dict[str, int]


@dataclass(slots=True)
class Explanation:
    pod: str
    quota: str
    state: str
    verdict: str
    levels: list[Level] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    #: Why the pod is not where it asked to be (its quota is left out of its tree).
    notes: list[str] = field(default_factory=list)
    #: The user and group limits that hold the pod back, one line each.
    held_by: list[str] = field(default_factory=list)
    #: What in-quota preemption does for a pod the gate holds ("" where it does nothing).
    preemption: str = ""
    #: The pods the verdict or the preemption says the next round evicts (not shown) and what
    #: the operator does when a PodDisruptionBudget keeps one.
    evicted: list[PodInfo] = field(default_factory=list)
    if_kept: str = ""
    #: Those of them whose eviction a PodDisruptionBudget would refuse now: (pod, why).
    kept: list[tuple[str, str]] = field(default_factory=list)

    def render(self) -> str:
        lines = [
            f"pod {self.pod}: {self.state}",
            f"quota: {self.quota}",
            *(f"note: {note}" for note in self.notes),
            f"verdict: {self.verdict}",
            *(f"held by: {line}" for line in self.held_by),
            *([f"preemption: {self.preemption}"] if self.preemption else []),
            *(f"kept by a budget: {pod}: {why}; {self.if_kept}" for pod, why in self.kept),
        ]
        if self.levels:
            lines.append("path to the root (pod's resources: runtime / used / request):")
            for depth, level in enumerate(self.levels):
                figures = ", ".join(
                    f"{key} {_fmt(key, level.runtime.get(key))} / {_fmt(key, level.used.get(key))}"
                    f" / {_fmt(key, level.request.get(key))}"
                    for key in sorted(set(level.used) | set(level.runtime) | set(level.request))
                )
                lines.append(f"  {'  ' * depth}{level.quota}: {figures or '-'}")
        lines += [f"to fit: {line}" for line in self.advice]
        return "\n".join(lines) + "\n"


#: What a revocation round does with a victim whose eviction is refused.
KEPT = (
    "if refused, the round leaves it (429: a RevocationBlocked Event, and with "
    "REVOCATION_AROUND_BUDGETS=true the quota's next pods go instead; any other refusal: "
    "RevocationFailed)"
)
#: What a gate round's in-quota preemption does with a victim whose eviction is refused.
KEPT_FROM_PREEMPTION = (
    "if refused, the gate round leaves it (429: a PreemptionBlocked Event, and its victims are "
    "chosen again without it; any other refusal: PreemptionFailed, and the preemption stops for "
    "the round)"
)

#: What a pod the gate released waits for: a node (the scheduler's Events on the pod say why none
#: fits), or only its turn.
AT_THE_SCHEDULER = " (no node fits it yet, or it is being scheduled: its Events say which)"


def _fmt(resource: str, units: int | None) -> str:
    return "-" if units is None else format_quantity(resource, units)


def _levels(snapshot: Snapshot, quota: str, pod: PodInfo) -> list[Level]:
    keys = set(mask(pod.requests, snapshot.quotas[quota].max)) or set(pod.requests)
    levels = []
    for name in [quota, *snapshot.ancestors(quota)]:
        result = snapshot.quotas[name]
        levels.append(
            Level(
                name,
                mask(result.runtime, keys),
                mask(result.used, keys),
                mask(result.request, keys),
            )
        )
    return levels


def _advice(shortfall: Shortfall) -> str:
    missing = shortfall.used + shortfall.request - shortfall.limit
    r = shortfall.resource
    if shortfall.limit_name.startswith("min"):
        return (
            f"quota {shortfall.quota} needs {format_quantity(r, missing)} more {r} of min for "
            f"non-preemptible pods (raise its min, or free non-preemptible usage)"
        )
    return (
        f"quota {shortfall.quota} needs {format_quantity(r, missing)} more {r}: pods of the quota "
        f"releasing that much, or its runtime growing by it (siblings lending more, a higher "
        f"min or weight)"
    )


def _subject(refusal: LimitRefusal, user: str) -> str:
    if refusal.kind == "user":
        return f"user {refusal.name}"
    return f"group {refusal.name} (the group user {user}'s pods are tracked under here)"


def _held_by(refusal: LimitRefusal, user: str) -> str:
    what = refusal.resource if refusal.resource == APPLICATIONS else f"resource {refusal.resource}"
    return (
        f"{_subject(refusal, user)}: limit '{refusal.limit_name}' at quota {refusal.quota} ({what})"
    )


def _limit_advice(refusal: LimitRefusal, user: str) -> str:
    """What would let the pod start under one user or group limit, with the numbers."""
    owner = f"{refusal.kind} {refusal.name}"
    at = f"at quota {refusal.quota} (limit '{refusal.limit_name}')"
    if refusal.resource == APPLICATIONS:
        # Above a lowered limit, more than one must stop: running + 1 <= limit.
        stopping = refusal.used + 1 - refusal.limit
        when = (
            "one of them stops (all its pods finish)"
            if stopping <= 1
            else f"{stopping} of them stop (all their pods finish)"
        )
        return (
            f"{_subject(refusal, user)} runs {refusal.used} of {refusal.limit} applications {at} "
            f"and this pod starts a new one; it starts when {when}, or the limit's "
            f"maxapplications is raised to {refusal.used + 1}"
        )
    r = refusal.resource

    def fmt(units: int) -> str:
        return format_quantity(r, units)

    has = f"{_subject(refusal, user)} has {fmt(refusal.used)} of {fmt(refusal.limit)} {r} {at}"
    room = refusal.limit - refusal.requested
    if room < 0:
        return (
            f"{has}; the pod alone requests {fmt(refusal.requested)} {r}, more than the limit: "
            f"it starts only when the limit is raised to {fmt(refusal.requested)} or more"
        )
    return (
        f"{has}; the pod requests {fmt(refusal.requested)}: it starts when {owner}'s usage "
        f"there drops to {fmt(room)} or less (pods counted for {owner} at {refusal.quota} or "
        f"below finishing), or the limit is raised to {fmt(refusal.used + refusal.requested)}"
    )


def _left_out_notes(snapshot: Snapshot, pod: PodInfo, quota: str) -> list[str]:
    """A pod that lands in the default quota because the quota it names (its label, or the quota
    named like its namespace) is left out: that quota's problems, which say so."""
    if quota != DEFAULT_QUOTA:
        return []
    wanted = pod.quota_label or pod.namespace
    if wanted == DEFAULT_QUOTA:
        return []
    return [
        f"{problem.object}: {problem.message}"
        for problem in snapshot.problems
        if problem.left_out
        and problem.object.startswith("ElasticQuota ")
        and problem.object.endswith(f"/{wanted}")
        and (pod.quota_label or problem.object == f"ElasticQuota {pod.namespace}/{wanted}")
    ]


def explain(
    snapshot: Snapshot,
    pod_key: str,
    check_ancestors: bool = False,
    released: Collection[str] = (),
    min_runtimes: MinRuntimes = NO_MIN_RUNTIMES,
    preemption_min_runtimes: MinRuntimes = NO_MIN_RUNTIMES,
    budgets: PodBudgets = NO_BUDGETS,
) -> Explanation:
    """The explanation for one pod (``namespace/name``); KeyError if the pod is unknown.
    ``released``: the keys of the pods whose ``ElasticQuotaAdmission`` condition is True (the gate
    released them; ``PodInfo`` does not keep it); ``min_runtimes``: revocation's protection of
    young pods by quota (``revocation_min_runtime`` and the quotas' annotations);
    ``preemption_min_runtimes``: in-quota preemption's (``preemption_min_runtime`` and theirs);
    ``budgets``: the PodDisruptionBudgets by the pods they select, to say which evictions the
    Eviction API would refuse."""
    found = _explain(
        snapshot, pod_key, check_ancestors, released, (min_runtimes, preemption_min_runtimes)
    )
    found.notes = _left_out_notes(snapshot, snapshot.pods[pod_key], found.quota)
    found.kept = [(pod.key, why) for pod, why in refused_evictions(found.evicted, budgets)]
    return found


def _explain(
    snapshot: Snapshot,
    pod_key: str,
    check_ancestors: bool,
    released: Collection[str],
    protections: tuple[MinRuntimes, MinRuntimes],
) -> Explanation:
    """``protections``: the minimum runtimes of revocation and of in-quota preemption."""
    pod = snapshot.pods[pod_key]
    quota = snapshot.pod_quota[pod_key]
    levels = _levels(snapshot, quota, pod) if not snapshot.quotas[quota].reserved else []
    if pod.is_terminal:
        return Explanation(pod_key, quota, f"finished ({pod.phase})", "holds nothing", levels)
    if pod.terminating:
        going = (
            "being deleted (evicted or removed); it counts in its quota until it is gone — "
            "its Events say whether the operator revoked or preempted it"
        )
        return Explanation(pod_key, quota, "terminating", going, levels)
    if pod.is_assigned:
        return _explain_running(snapshot, pod, quota, levels, protections[0].of(quota))
    verdict, seen = _pending_verdict(snapshot, pod, check_ancestors, released)
    if seen is not snapshot and levels:
        levels = _levels(seen, quota, pod)
    state = "pending"
    if verdict.released:
        return Explanation(pod_key, quota, state, f"{verdict.reason}{AT_THE_SCHEDULER}", levels)
    if verdict.admitted:
        return Explanation(pod_key, quota, state, f"fits now ({verdict.reason})", levels)
    advice = [_advice(item) for item in verdict.shortfalls]
    found = Explanation(pod_key, quota, state, f"waits: {verdict.reason}", levels, advice)
    if verdict.limit_refusals:
        limits = snapshot.user_limits.check(pod, quota)
        user = limits.user if limits is not None else snapshot.user_limits.default_user
        found.held_by = [_held_by(item, user) for item in verdict.limit_refusals]
        found.advice += [_limit_advice(item, user) for item in verdict.limit_refusals]
    elif is_gated(pod):
        found.preemption, found.evicted = _preemption(seen, pod, quota, protections[1].of(quota))
        found.if_kept = KEPT_FROM_PREEMPTION
    return found


def _pending_verdict(
    snapshot: Snapshot, pod: PodInfo, check_ancestors: bool, released: Collection[str]
) -> tuple[Verdict, Snapshot]:
    """The verdict on a pending pod and the figures it was reached on (``gating.pending_verdict``):
    the gate's decision for a gated pod (released pods not bound yet, and the round's earlier
    releases, counted as used), the release for a pod the gate released, the admission check on
    the snapshot for any other."""
    decisions = decisions_by_pod(snapshot, check_ancestors) if is_gated(pod) else {}
    return pending_verdict(snapshot, pod, check_ancestors, decisions, released)


def _explain_running(
    snapshot: Snapshot, pod: PodInfo, quota: str, levels: list[Level], min_runtime: MinRuntime
) -> Explanation:
    result = snapshot.quotas[quota]
    state = f"running on {pod.node_name}"
    if result.reserved or not is_over_used(result.used, result.runtime):
        return Explanation(pod.key, quota, state, "within its quota's runtime", levels)
    if not quota_is_over_used(snapshot, quota):
        verdict = "its quota is over its runtime only until its terminating pods are gone"
        return Explanation(pod.key, quota, state, verdict, levels)
    # the live operator's round, terminating pods aside
    choice = round_choice(snapshot, quota, min_runtime=min_runtime)
    victims = choice.victims
    if any(victim.key == pod.key for victim in victims):
        verdict = (
            f"its quota uses more than its runtime; the next revocation round evicts it "
            f"({len(victims)} pod(s): {', '.join(v.key for v in victims)})"
        )
        return Explanation(pod.key, quota, state, verdict, levels, evicted=[pod], if_kept=KEPT)
    if any(young.key == pod.key for young in choice.spared):
        verdict = (
            f"its quota uses more than its runtime; the next revocation round would evict it but "
            f"spares it until it has run {min_runtime.seconds:g}s (until "
            f"{min_runtime.ends_text(pod)}), choosing others instead: "
            f"{', '.join(v.key for v in victims) or 'none'}"
        )
    else:
        verdict = "its quota uses more than its runtime, but this pod is not among the victims"
    return Explanation(pod.key, quota, state, verdict, levels)


def _preemption(
    seen: Snapshot, pod: PodInfo, quota: str, young: MinRuntime
) -> tuple[str, list[PodInfo]]:
    """What the next gate round's in-quota preemption does for ``pod``, held at the gate for its
    quota, on the figures the gate holds it on (``seen``): which pods of its quota it evicts, or
    whose minimum runtime it waits for ("": nothing, no set of pods makes room); and the pods it
    evicts."""
    victims = preemption_victims(seen, pod, young=young)
    if victims:
        said = (
            f"the next gate round evicts {len(victims)} lower-priority pod(s) of quota {quota} "
            f"to make room: {', '.join(victim.key for victim in victims)}"
        )
        return said, victims
    deferral = deferred_by_min_runtime(seen, pod, young) if young.seconds else None
    if deferral is None:
        return "", []
    said = (
        f"waits for the minimum runtime ({young.seconds:g} s) of "
        f"{', '.join(victim.key for victim in deferral.young)}, lower-priority pods of quota "
        f"{quota}: they may be evicted to make room from {moment_text(deferral.until)}"
    )
    return said, []
