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
"""

from __future__ import annotations

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


def preemption_victims(snapshot: Snapshot, pod: PodInfo) -> list[PodInfo] | None:
    """The pods to evict so that ``pod`` fits its quota (empty: it fits already).

    None when no set of allowed victims makes room (or the pod's quota is reserved).
    """
    quota = snapshot.pod_quota[pod.key]
    result = snapshot.quotas[quota]
    if result.reserved:
        return None
    if any(other.terminating for other in snapshot.pods_of(quota) if other.priority < pod.priority):
        return None  # earlier victims are still going: wait for them rather than evict more
    request = mask(pod.requests, result.max)
    if not pod.preemptible and not _fits(result.non_preemptible_used, request, result.min):
        return None  # its min holds it back: evicting preemptible pods makes no room there
    used = dict(result.used)
    if _fits(used, request, result.runtime):
        return []
    if quota == DEFAULT_QUOTA or pod.never_preempts:
        return None
    victims: list[PodInfo] = []
    candidates = [
        other
        for other in snapshot.pods_of(quota)
        if other.is_assigned
        and other.preemptible
        and not other.terminating
        and other.priority < pod.priority
    ]
    for candidate in least_important_first(candidates):
        victims.append(candidate)
        used = subtract_clamped(used, mask(candidate.requests, result.max))
        if _fits(used, request, result.runtime):
            return _spare_unneeded(victims, used, request, result.runtime, result.max)
    return None


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
