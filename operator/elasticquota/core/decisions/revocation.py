"""Which pods a quota that uses more than its runtime must give back.

Only the quota's own assigned pods are candidates. They are tried from least to most important,
non-preemptible pods skipped, until used fits the runtime. Then the tentatively removed pods are
walked back from most to least important and every one that still fits is kept: the rest are the
victims, most important first. As in the reference, after a pod is removed the used list is reduced
to the resources that pod requests, which decides what is compared afterwards.

"Least important first" is the reference's order (the inverse of Kubernetes' ``MoreImportantPod``):
lower ``spec.priority`` first; at equal priority the pod with the later ``status.startTime`` first;
a pod without a start time (bound, not started yet) counts as starting now, i.e. after every pod
that has one. ``metadata.creationTimestamp`` plays no part, as in the reference. Where the reference
leaves the order open (equal priority and equal start time, or both without one: its sort is not
stable), the pod whose ``namespace/name`` sorts first goes first, so that a round is reproducible.

``spared``: pods not to choose, as non-preemptible ones. With ``revocation_around_budgets`` the
operator passes the pods a PodDisruptionBudget kept in the round (their eviction answered 429) and
chooses again: the quota's other pods give the resources back (Koordinator #2651 asks for this; the
reference skips the kept pod and the quota stays over-used until the next round).

``MinRuntime`` (``core.decisions.minruntime``): a pod that started less than
``revocation_min_runtime`` seconds ago is not chosen either, so that a pod makes some progress
before it gives the resources back (KAI's reclaim minimum runtime, Kueue KEP-9876's
``reclaimMinAdmitDuration``; off by default: the reference has no such rule). The round evicts
what it would evict without the rule but the protected pods; in their place, pods of their
priority that started earlier may go, never a pod of a higher priority: the rule delays a
revocation, it does not turn the priority order over. A pod without a start time has not run
yet and is not protected. A ``RoundChoice`` names the pods the rule keeps out of a round beside
its victims (the operator's next round comes when the first of them may go). ``MinRuntimes``:
the minimum by quota, the quota's ``revocation-min-runtime`` annotation, else its nearest
ancestor's, else the operator's setting (KAI sets it per queue).

``round_choice`` is the one entry point: ``plan`` (``revocation_choices``), ``explain`` and the
live operator (``controller.enforcement.revocation``) all call it on their snapshot, so they cannot
choose differently from the same pods (all parse pods with ``api.parse.parse_pod``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from elasticquota.core.decisions.minruntime import (
    NO_MIN_RUNTIME,
    NO_MIN_RUNTIMES,
    MinRuntime,
    MinRuntimes,
)
from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import ResourceList, add, mask
from elasticquota.core.solve.results import Snapshot, is_over_used


def least_important_first(pods: Iterable[PodInfo]) -> list[PodInfo]:
    """Lower priority first; equal priority: later start first (no start time = now, after every
    start time); still equal: by ``namespace/name``."""
    return sorted(
        pods,
        key=lambda pod: (
            pod.priority,
            -(pod.start_time if pod.start_time is not None else math.inf),
            pod.key,
        ),
    )


def select_victims(
    pods: Sequence[PodInfo],
    used: Mapping[str, int],
    runtime: Mapping[str, int],
    tracked: Mapping[str, int],
    spared: Collection[str] = (),
    protected: Collection[str] = (),
) -> list[PodInfo]:
    """The pods to evict so that ``used <= runtime``; requests masked to the ``tracked`` keys;
    ``spared``: keys of pods never chosen. ``protected``: keys of pods never chosen either; of
    the others, those the choice without the protection takes, and in the protected ones' place
    only pods of no higher priority than one of them."""
    return _Walk(pods, used, runtime, tracked, spared).victims_and_plain(protected)[0]


@dataclass(frozen=True, slots=True)
class _Walk:
    """The walk of ``select_victims`` over one quota's pods."""

    pods: Sequence[PodInfo]
    used: Mapping[str, int]
    runtime: Mapping[str, int]
    tracked: Mapping[str, int]
    spared: Collection[str]

    def victims_and_plain(self, protected: Collection[str]) -> tuple[list[PodInfo], list[PodInfo]]:
        """The choice around ``protected``, and the choice without it (each walked once)."""
        plain = self.choose((), ())
        if not protected:
            return plain, plain
        return self.choose(protected, {pod.key for pod in plain}), plain

    def choose(self, protected: Collection[str], due: Collection[str]) -> list[PodInfo]:
        """One walk; ``due``: the keys the choice without ``protected`` takes (the pods above a
        protected one's priority that may go all the same)."""
        current: ResourceList = dict(self.used)
        removed: list[tuple[PodInfo, ResourceList]] = []
        ceiling = math.inf  # the lowest priority of a protected pod passed over
        for pod in least_important_first([pod for pod in self.pods if pod.is_assigned]):
            if not is_over_used(current, self.runtime):
                break
            if not pod.preemptible or pod.terminating:  # never these; terminating ones go
                continue
            if pod.key in protected:
                ceiling = min(ceiling, pod.priority)
                continue
            if pod.key in self.spared or (pod.priority > ceiling and pod.key not in due):
                continue
            request = mask(pod.requests, self.tracked)
            current = {key: current.get(key, 0) - value for key, value in request.items()}
            removed.append((pod, request))
        return self._kept_back(current, removed)

    def _kept_back(
        self, current: ResourceList, removed: list[tuple[PodInfo, ResourceList]]
    ) -> list[PodInfo]:
        """The removed pods walked back, most important first: each that still fits stays."""
        if is_over_used(current, self.runtime):
            return [pod for pod, _ in removed]
        victims: list[PodInfo] = []
        for pod, request in reversed(removed):
            candidate = add(current, request)
            if is_over_used(candidate, self.runtime):
                victims.append(pod)
            else:
                current = candidate
        return victims


def used_without_terminating(
    used: Mapping[str, int], pods: Sequence[PodInfo], tracked: Mapping[str, int]
) -> ResourceList:
    """``used`` with the requests of terminating pods taken out: they are already going.

    (They still count in ``used`` until they are gone, as in the reference; revocation must not
    evict another pod for resources that are already being given back.)
    """
    remaining = dict(used)
    for pod in pods:
        if pod.terminating and pod.is_assigned:
            for key, value in mask(pod.requests, tracked).items():
                remaining[key] = max(0, remaining.get(key, 0) - value)
    return remaining


def revocable_used(snapshot: Snapshot, quota: str) -> ResourceList:
    """What revocation compares with the quota's runtime: its used, terminating pods taken out."""
    result = snapshot.quotas[quota]
    return used_without_terminating(result.used, snapshot.pods_of(quota), result.max)


def quota_is_over_used(snapshot: Snapshot, quota: str) -> bool:
    """Whether the quota is due a revocation round once its over-use has lasted long enough.

    Its pods are looked at only when its used exceeds its runtime: taking terminating pods out
    can only lower the used (to 0 at least), never raise it above a runtime (never negative).
    """
    result = snapshot.quotas[quota]
    if not is_over_used(result.used, result.runtime):
        return False
    return is_over_used(revocable_used(snapshot, quota), result.runtime)


@dataclass(frozen=True, slots=True)
class RoundChoice:
    """What one revocation round of a quota does: ``victims``, in eviction order, and the pods
    ``spared`` for their minimum runtime (those the round would choose without it, in eviction
    order; the round chooses around them)."""

    victims: list[PodInfo]
    spared: list[PodInfo]
    #: The protection the round applied (``spared`` pods may go at its ``ends``).
    min_runtime: MinRuntime = NO_MIN_RUNTIME


def round_choice(
    snapshot: Snapshot,
    quota: str,
    spared: Collection[str] = (),
    min_runtime: MinRuntime = NO_MIN_RUNTIME,
) -> RoundChoice:
    """One revocation round of ``quota`` (no victim when it fits), never choosing the pods of
    ``spared`` (keys) nor those ``min_runtime`` protects."""
    result = snapshot.quotas[quota]
    used = revocable_used(snapshot, quota)
    pods = snapshot.pods_of(quota)
    young = {pod.key for pod in pods if min_runtime.protects(pod)} if min_runtime.seconds else set()
    walk = _Walk(pods, used, result.runtime, result.max, spared)
    victims, plain = walk.victims_and_plain(young)
    spared_now = [pod for pod in plain if pod.key in young]
    return RoundChoice(victims, spared_now, min_runtime)


def victims_of(
    snapshot: Snapshot,
    quota: str,
    spared: Collection[str] = (),
    min_runtime: MinRuntime = NO_MIN_RUNTIME,
) -> list[PodInfo]:
    """The pods one revocation round of ``quota`` evicts, in eviction order (``round_choice``)."""
    return round_choice(snapshot, quota, spared, min_runtime).victims


def revocation_choices(
    snapshot: Snapshot, min_runtimes: MinRuntimes = NO_MIN_RUNTIMES
) -> list[tuple[str, RoundChoice]]:
    """For every over-used quota (the reserved ones excluded), its round."""
    return [
        (name, round_choice(snapshot, name, min_runtime=min_runtimes.of(name)))
        for name in sorted(snapshot.quotas)
        if name not in (ROOT_QUOTA, SYSTEM_QUOTA, DEFAULT_QUOTA)
        and not snapshot.quotas[name].reserved
        and quota_is_over_used(snapshot, name)
    ]


def revocation_plan(
    snapshot: Snapshot, min_runtimes: MinRuntimes = NO_MIN_RUNTIMES
) -> list[tuple[str, list[PodInfo]]]:
    """For every over-used quota (the reserved ones excluded), its victims in eviction order."""
    return [(name, choice.victims) for name, choice in revocation_choices(snapshot, min_runtimes)]
