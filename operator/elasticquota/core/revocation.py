"""Which pods a quota that uses more than its runtime must give back (semantics §3.4).

Only the quota's own assigned pods are candidates. They are tried from least to most important
(lower priority first; at equal priority the one that started later; no start time counts as "now"),
non-preemptible pods skipped, until used fits the runtime. Then the tentatively removed pods are
walked back from most to least important and every one that still fits is kept: the rest are the
victims, most important first. As in the reference, after a pod is removed the used list is reduced
to the resources that pod requests, which decides what is compared afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.models import PodInfo
from elasticquota.core.resources import ResourceList, add, exceeding, mask
from elasticquota.core.results import Snapshot


def is_over_used(used: Mapping[str, int], runtime: Mapping[str, int]) -> bool:
    """used > runtime on some resource both have."""
    return bool(exceeding(used, runtime))


def least_important_first(pods: list[PodInfo]) -> list[PodInfo]:
    """Lower priority first; equal priority: later start first (no start time = now)."""
    return sorted(
        pods,
        key=lambda pod: (
            pod.priority,
            -(pod.start_time if pod.start_time is not None else math.inf),
            pod.key,
        ),
    )


def select_victims(
    pods: list[PodInfo],
    used: Mapping[str, int],
    runtime: Mapping[str, int],
    tracked: Mapping[str, int],
) -> list[PodInfo]:
    """The pods to evict so that ``used <= runtime``; requests masked to the ``tracked`` keys."""
    current: ResourceList = dict(used)
    removed: list[tuple[PodInfo, ResourceList]] = []
    for pod in least_important_first([pod for pod in pods if pod.is_assigned]):
        if not is_over_used(current, runtime):
            break
        if not pod.preemptible or pod.terminating:  # never these; terminating ones already go
            continue
        request = mask(pod.requests, tracked)
        current = {key: current.get(key, 0) - value for key, value in request.items()}
        removed.append((pod, request))
    if is_over_used(current, runtime):
        return [pod for pod, _ in removed]
    victims: list[PodInfo] = []
    for pod, request in reversed(removed):
        candidate = add(current, request)
        if is_over_used(candidate, runtime):
            victims.append(pod)
        else:
            current = candidate
    return victims


def used_without_terminating(
    used: Mapping[str, int], pods: list[PodInfo], tracked: Mapping[str, int]
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


def revocation_plan(snapshot: Snapshot) -> list[tuple[str, list[PodInfo]]]:
    """For every over-used quota (root and system excluded), its victims in eviction order."""
    plan = []
    for name in sorted(snapshot.quotas):
        result = snapshot.quotas[name]
        if name in (ROOT_QUOTA, SYSTEM_QUOTA, DEFAULT_QUOTA) or result.reserved:
            continue
        pods = snapshot.pods_of(name)
        used = used_without_terminating(result.used, pods, result.max)
        if not is_over_used(used, result.runtime):
            continue
        victims = select_victims(pods, used, result.runtime, result.max)
        plan.append((name, victims))
    return plan
