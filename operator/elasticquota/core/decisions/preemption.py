"""In-quota preemption: room for a waiting pod from lower-priority pods of its own quota.

A pod that does not fit its quota may take the place of pods of the *same* quota with strictly lower
priority (never across quotas: priorities of different groups are not comparable). Candidates are
the quota's assigned pods that are preemptible, not terminating, not in the default quota (as the
reference's ``disableDefaultQuotaPreemption``), of strictly lower priority. The fewest of them are
chosen, lowest priority first (then latest start), such that ``used - evicted + pod <= runtime`` on
every resource the quota's runtime has; if even all of them would not make room, none is chosen.
A pod with ``preemptionPolicy: Never`` takes nobody's place, and while earlier victims of the quota
are still terminating nothing more is chosen (they are making the room already). A non-preemptible
pod that its quota's ``min`` holds back (non-preemptible used + pod > min) takes nobody's place
either: the candidates are preemptible, and evicting them frees nothing of that.

The snapshot is the one the gate's check read (``GateDecision.seen``), where pods released but not
bound yet count as used: the room is made against the figures that hold the pod back.

``spared``: pods not to choose. The operator does not watch PodDisruptionBudgets; it learns that a
budget keeps a pod when the pod's eviction is refused (429), and chooses again without it, as
Kubernetes' preemption reprieves the victims whose eviction would violate a budget: the other
lower-priority pods of the quota make the room if they can (Koordinator #2651 asks for this).

``young``: with a minimum runtime (``preemption_min_runtime``, or the quota's
``preemption-min-runtime`` annotation: KAI's ``preemptMinRuntime``; off by default, the
reference has none) a pod that started less than that long ago is not chosen either: other
lower-priority pods make the room if they can, else the waiting pod waits until the young ones
may go (``deferred_by_min_runtime`` names them and when).

A quota's candidates, least important first, are a prefix of the order of all its preemptible
assigned pods (the order starts with the priority): ``QuotaCandidates`` sorts them once, and a
waiting pod takes the prefix below its priority. The gate keeps them across rounds
(``PreemptionMemo``), made again only for a quota whose pods changed (the engine replaces a
quota's pods tuple on every change): a round with 100 waiting pods in a quota of 10,000 looked at
all 10,000 for each of them, 212 ms of the event loop in one go, every round. A pod that no set
of them can make room for (it asks for more than evicting every one of them frees) is known so
from their running totals (``freeable``) without walking them: the walk cost 28 ms per such pod
and round at 10,000 candidates. The pods a minimum runtime protects are one run per priority
(``runs_below``), left out of the totals and of the walk by bisection rather than looked at one
by one: after a burst nearly every candidate is young.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import accumulate

from elasticquota.core.decisions.minruntime import NO_MIN_RUNTIME, MinRuntime
from elasticquota.core.decisions.revocation import least_important_first
from elasticquota.core.keys import DEFAULT_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import (
    ResourceList,
    add,
    exceeding,
    mask,
    subtract_clamped,
)
from elasticquota.core.solve.results import Snapshot


def _fits(used: ResourceList, request: ResourceList, runtime: ResourceList) -> bool:
    return not exceeding(add(used, request), runtime)


@dataclass(frozen=True, slots=True)
class QuotaCandidates:
    """A quota's pods as in-quota preemption reads them."""

    #: The quota's pods it was made from (the snapshot's tuple, compared by identity).
    pods: Sequence[PodInfo]
    #: Its assigned, preemptible pods that are not terminating, least important first.
    ordered: tuple[PodInfo, ...]
    #: Their priorities, in that order (ascending).
    priorities: tuple[int, ...]
    #: The lowest priority among its terminating pods (infinity: none).
    lowest_terminating: float
    #: Per resource, the running totals of their requests in that order (``[0]`` is 0).
    totals: dict[str, list[int]]
    #: Where each priority's candidates begin in ``ordered``, and its length last.
    bounds: tuple[int, ...]

    @classmethod
    def of(cls, pods: Sequence[PodInfo]) -> QuotaCandidates:
        ordered = least_important_first(pod for pod in pods if is_candidate(pod))
        terminating = [pod.priority for pod in pods if pod.terminating]
        names = {name for pod in ordered for name in pod.requests}
        firsts = [
            i
            for i in range(len(ordered))
            if not i or ordered[i - 1].priority != ordered[i].priority
        ]
        return cls(
            pods,
            tuple(ordered),
            tuple(pod.priority for pod in ordered),
            min(terminating, default=math.inf),
            {
                name: list(accumulate((pod.requests.get(name, 0) for pod in ordered), initial=0))
                for name in names
            },
            (*firsts, len(ordered)),
        )

    def below(self, priority: int) -> tuple[PodInfo, ...]:
        """The candidates of strictly lower priority, least important first."""
        return self.ordered[: bisect_left(self.priorities, priority)]

    def runs_below(self, priority: int, young: MinRuntime) -> list[tuple[int, int]]:
        """The index ranges of ``ordered`` of the candidates of strictly lower priority that
        ``young`` does not protect, in order. Within a priority the candidates go from the
        latest start to the earliest (those without one first, unprotected): its protected ones
        are one run in the middle, found by bisection, not by looking at each."""
        count = bisect_left(self.priorities, priority)
        if not young.seconds:
            return [(0, count)] if count else []
        runs = []
        for low, high in zip(self.bounds, self.bounds[1:], strict=False):
            if low >= count:
                break
            started = bisect_left(self.ordered, 1, low, high, key=_has_started)
            old = bisect_left(self.ordered, 1, started, high, key=lambda pod: _is_old(young, pod))
            runs += [(low, started), (old, high)]
        return [(low, high) for low, high in runs if low < high]

    def freeable(self, runs: list[tuple[int, int]]) -> ResourceList:
        """What evicting every candidate of ``runs`` would free, per resource (empty: none)."""
        if not runs:
            return {}
        return {
            name: sum(running[high] - running[low] for low, high in runs)
            for name, running in self.totals.items()
        }

    def terminating_below(self, priority: int) -> bool:
        """Some pod of strictly lower priority is terminating (an earlier victim going)."""
        return self.lowest_terminating < priority


def is_candidate(pod: PodInfo) -> bool:
    """A pod in-quota preemption may evict at all: assigned, preemptible, not terminating."""
    return pod.is_assigned and pod.preemptible and not pod.terminating


def _has_started(pod: PodInfo) -> int:
    return int(pod.start_time is not None)


def _is_old(young: MinRuntime, pod: PodInfo) -> int:
    return int(not young.protects(pod))


class PreemptionMemo:
    """Each quota's ``QuotaCandidates``, made again only when the snapshot's pods of the quota
    are another tuple than the ones they were made from."""

    def __init__(self) -> None:
        self._by_quota: dict[str, QuotaCandidates] = {}

    def candidates(self, snapshot: Snapshot, quota: str) -> QuotaCandidates:
        pods = snapshot.pods_of(quota)
        known = self._by_quota.get(quota)
        if known is None or known.pods is not pods:
            known = self._by_quota[quota] = QuotaCandidates.of(pods)
        return known

    def keep_only(self, quotas: Collection[str]) -> None:
        """Forget the quotas not in ``quotas`` (those with no pod waiting any more)."""
        self._by_quota = {
            quota: known for quota, known in self._by_quota.items() if quota in quotas
        }


def preemption_victims(
    snapshot: Snapshot,
    pod: PodInfo,
    memo: PreemptionMemo | None = None,
    spared: Collection[str] = (),
    young: MinRuntime = NO_MIN_RUNTIME,
) -> list[PodInfo] | None:
    """The pods to evict so that ``pod`` fits its quota (empty: it fits already).

    None when no set of allowed victims makes room (or the pod's quota is reserved). ``memo``:
    the quotas' candidates as sorted for earlier pods; without it, the quota's pods of lower
    priority are sorted here (all that this pod needs). ``spared``: keys of pods never chosen;
    nor are the pods ``young`` protects.
    """
    quota = snapshot.pod_quota[pod.key]
    result = snapshot.quotas[quota]
    if result.reserved:
        return None
    if memo is not None:
        candidates = memo.candidates(snapshot, quota)
    else:
        lower = [other for other in snapshot.pods_of(quota) if other.priority < pod.priority]
        candidates = QuotaCandidates.of(lower)
    if candidates.terminating_below(pod.priority):
        return None  # earlier victims are still going: wait for them rather than evict more
    request = mask(pod.requests, result.max)
    if not pod.preemptible and not _fits(result.non_preemptible_used, request, result.min):
        return None  # its min holds it back: evicting preemptible pods makes no room there
    used = dict(result.used)
    if _fits(used, request, result.runtime):
        return []
    if quota == DEFAULT_QUOTA or pod.never_preempts:
        return None
    runs = candidates.runs_below(pod.priority, young)
    freeable = _without_spared(candidates.freeable(runs), snapshot, quota, pod, spared, young)
    if not freeable or not _fits(
        subtract_clamped(used, mask(freeable, result.max)), request, result.runtime
    ):
        return None  # not even every allowed candidate makes room: no need to walk them
    victims: list[PodInfo] = []
    for candidate in (candidates.ordered[i] for low, high in runs for i in range(low, high)):
        if candidate.key in spared:
            continue
        victims.append(candidate)
        used = subtract_clamped(used, mask(candidate.requests, result.max))
        if _fits(used, request, result.runtime):
            return _spare_unneeded(victims, used, request, result.runtime, result.max)
    return None


def _without_spared(
    freeable: ResourceList,
    snapshot: Snapshot,
    quota: str,
    pod: PodInfo,
    spared: Collection[str],
    young: MinRuntime,
) -> ResourceList:
    """``freeable`` less the requests of the ``spared`` pods among the candidates it counts
    (those of ``quota`` of lower priority than ``pod`` that ``young`` does not protect): the few
    pods a PodDisruptionBudget kept are looked up by key, so that the shortcut also answers
    where they are the ones that would have made room (else every candidate is walked)."""
    if not freeable:
        return freeable
    counted = [
        snapshot.pods[key]
        for key in set(spared)
        if key in snapshot.pods and snapshot.pod_quota.get(key) == quota
    ]
    for other in counted:
        if is_candidate(other) and other.priority < pod.priority and not young.protects(other):
            freeable = subtract_clamped(freeable, other.requests)
    return freeable


def _spare_unneeded(
    victims: list[PodInfo],
    used: ResourceList,
    request: ResourceList,
    runtime: ResourceList,
    tracked: ResourceList,
) -> list[PodInfo]:
    """Give back, most important first, every chosen victim whose eviction is not needed."""
    kept: list[PodInfo] = []
    for victim in reversed(victims):
        restored = add(used, mask(victim.requests, tracked))
        if _fits(restored, request, runtime):
            used = restored
        else:
            kept.append(victim)
    return list(reversed(kept))


@dataclass(frozen=True, slots=True)
class Deferral:
    """A preemption the minimum runtime holds back: the young pods it would evict, least
    important first, and when the last of them may go (epoch seconds)."""

    young: tuple[PodInfo, ...]
    until: float


def deferred_by_min_runtime(
    snapshot: Snapshot,
    pod: PodInfo,
    young: MinRuntime,
    memo: PreemptionMemo | None = None,
    spared: Collection[str] = (),
) -> Deferral | None:
    """Why ``pod`` takes nobody's place although lower-priority pods could make room, asked where
    ``preemption_victims`` with ``young`` made none: the choice without the minimum runtime
    would evict pods ``young`` protects. None when the protection is not what holds it back (it
    fits, or no room could be made even with the young pods)."""
    victims = preemption_victims(snapshot, pod, memo, spared) or []
    protected = tuple(victim for victim in victims if young.protects(victim))
    if not protected:
        return None
    return Deferral(protected, max(young.ends(victim) for victim in protected))
