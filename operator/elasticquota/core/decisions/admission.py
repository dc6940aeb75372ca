"""Does a pending pod fit its quota now? The reference's PreFilter check, as a pure function.

A pod fits when ``used + request <= runtime`` on every resource both sides have (its request masked
to the quota's max keys); a non-preemptible pod must also fit ``nonPreemptibleUsed + request <= min`
min`` (the spec min); optionally every ancestor below the root is checked the same way. Each pod is
checked on its own against the current usage. Reserved quotas (system, default) are never limited.

The user and group limits (``core.userlimits``, quota annotation ``elasticquota.dev/user-limits``)
must hold too: at the pod's quota and every ancestor, for the pod's user and its tracked group, the
usage plus the pod's request stays within every resource the limit in force lists, and a pod that
starts a new application keeps the running applications within ``maxapplications``. The verdict
lists every quota shortfall and every user or group limit the pod would break.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.quantity import format_quantity
from elasticquota.core.quantities.resources import ResourceList, add, mask
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.core.userlimits.records import LimitRefusal
from elasticquota.core.userlimits.tracker import UserLimitsOverlay, UserLimitsView


@dataclass(frozen=True, slots=True)
class Shortfall:
    """One resource of one quota level that blocks a pod."""

    quota: str
    resource: str
    limit_name: str  # "runtime" or "min"
    used: int
    request: int
    limit: int

    def describe(self, fmt: Callable[[str, int], str] = format_quantity) -> str:
        """``quota q: cpu used 8 + request 16 > runtime 19429m``; ``fmt`` formats the figures
        (the quantities messages quote by default, as in the pod condition and ``plan -o
        json``)."""
        r = self.resource
        return (
            f"quota {self.quota}: {r} used {fmt(r, self.used)} + request "
            f"{fmt(r, self.request)} > {self.limit_name} {fmt(r, self.limit)}"
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a pod fits now, and if not, what blocks it."""

    pod: str
    quota: str
    admitted: bool
    reason: str
    shortfalls: tuple[Shortfall, ...] = ()
    #: The user and group limits the pod would break (leaf to root, user before group).
    limit_refusals: tuple[LimitRefusal, ...] = ()
    #: Released by the admission gate already, not bound yet: it waits for the scheduler (a node
    #: that fits it), not for its quota (``gating.pending_verdict``).
    released: bool = False


def _shortfalls(
    quota: str, used: Mapping[str, int], request: ResourceList, limit: Mapping[str, int], name: str
) -> list[Shortfall]:
    total = add(used, request)
    return [
        Shortfall(quota, key, name, used.get(key, 0), request.get(key, 0), limit[key])
        for key in sorted(total)
        if key in limit and total[key] > limit[key]
    ]


def check_pod(
    snapshot: Snapshot,
    pod: PodInfo,
    check_ancestors: bool = False,
    users: UserLimitsView | UserLimitsOverlay | None = None,
) -> Verdict:
    """The admission verdict for one pod, given the solved snapshot; ``users``: the user limits
    to check against (the snapshot's by default; gating passes one with its released pods)."""
    quota = snapshot.pod_quota[pod.key]
    result = snapshot.quotas[quota]
    if result.reserved:
        return Verdict(pod.key, quota, True, f"quota {quota} is reserved and not limited")
    request = mask(pod.requests, result.max)
    blocking = _shortfalls(quota, result.used, request, result.runtime, "runtime")
    if not pod.preemptible:
        blocking += _shortfalls(
            quota, result.non_preemptible_used, request, result.min, "min (non-preemptible)"
        )
    if check_ancestors:
        blocking += _ancestor_shortfalls(snapshot, quota, request)
    limits = (users or snapshot.user_limits).check(pod, quota)
    refusals = limits.refusals if limits is not None else ()
    if blocking or refusals:
        reason = "; ".join(
            [*(item.describe() for item in blocking), *(item.message for item in refusals)]
        )
        return Verdict(pod.key, quota, False, reason, tuple(blocking), refusals)
    return Verdict(pod.key, quota, True, f"fits in quota {quota}")


def _ancestor_shortfalls(snapshot: Snapshot, quota: str, request: ResourceList) -> list[Shortfall]:
    """Each ancestor's used (masked to the request's keys) + request against its runtime."""
    found: list[Shortfall] = []
    for ancestor in snapshot.ancestors(quota):
        level: QuotaResult = snapshot.quotas[ancestor]
        found += _shortfalls(ancestor, mask(level.used, request), request, level.runtime, "runtime")
    return found
