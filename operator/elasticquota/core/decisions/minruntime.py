"""How long a pod runs before an eviction of the operator's may take it: the minimum runtimes.

Two evictions protect young pods, each with its own setting and annotation, off by default (the
reference has neither rule): revocation (``revocation_min_runtime``, annotation
``elasticquota.dev/revocation-min-runtime``: KAI's reclaim minimum runtime, Kueue KEP-9876's
``reclaimMinAdmitDuration``) and in-quota preemption (``preemption_min_runtime``, annotation
``elasticquota.dev/preemption-min-runtime``: KAI's ``preemptMinRuntime``). KAI keeps the two
apart because they protect against different pods: reclaim gives borrowed resources back to
another group, preemption makes room for a more important pod of the same group, and a group
may accept the second sooner than the first.

``MinRuntime``: a pod that started less than ``seconds`` before ``now`` is protected; a pod
without a start time has not run yet and is not. ``MinRuntimes``: the minimum by quota, the
quota's own annotation, else its nearest ancestor's, else the operator's setting (KAI sets both
per queue, inherited down the queue tree); ``of_revocation`` and ``of_preemption`` read which
annotation a walk follows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota


@dataclass(frozen=True, slots=True)
class MinRuntime:
    """A protection of young pods: one that started less than ``seconds`` before ``now`` (epoch
    seconds, as ``PodInfo.start_time``) is not a victim; ``seconds`` 0: none is protected."""

    seconds: float
    now: float

    def protects(self, pod: PodInfo) -> bool:
        start = pod.start_time
        return self.seconds > 0 and start is not None and self.now - start < self.seconds

    def ends(self, pod: PodInfo) -> float:
        """When the protection of ``pod`` (one it ``protects``) ends."""
        start = pod.start_time
        return (self.now if start is None else start) + self.seconds

    def ends_text(self, pod: PodInfo) -> str:
        """``ends`` as Kubernetes writes times: ``2026-11-28T12:50:04Z`` (UTC, whole seconds up)."""
        return moment_text(self.ends(pod))


def moment_text(epoch: float) -> str:
    """Epoch seconds as RFC 3339 in UTC, rounded up to the second (a pod spared until then may
    go at that second, not before)."""
    return datetime.fromtimestamp(math.ceil(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: No pod is protected: the reference's rule.
NO_MIN_RUNTIME = MinRuntime(0.0, 0.0)

#: Which of a quota's minimum runtimes a walk reads (None: the quota sets none).
OwnMinRuntime = Callable[[Quota], float | None]


def of_revocation(spec: Quota) -> float | None:
    """The quota's ``revocation-min-runtime`` annotation in seconds."""
    return spec.revocation_min_runtime


def of_preemption(spec: Quota) -> float | None:
    """The quota's ``preemption-min-runtime`` annotation in seconds."""
    return spec.preemption_min_runtime


def _no_quota(name: str) -> Quota | None:
    return None


@dataclass(frozen=True, slots=True)
class MinRuntimes:
    """The protection by quota, as of ``default.now``: a quota's own annotation (``own``:
    revocation's by default), else its nearest ancestor's, else ``default``'s seconds (the
    operator's setting). ``quota_of``: a quota's spec by name (None: unknown, the walk up ends
    there)."""

    default: MinRuntime
    quota_of: Callable[[str], Quota | None] = _no_quota
    own: OwnMinRuntime = of_revocation

    def of(self, quota: str) -> MinRuntime:
        seconds = inherited_min_runtime(quota, self.quota_of, self.default.seconds, self.own)
        if seconds == self.default.seconds:
            return self.default
        return MinRuntime(seconds, self.default.now)


def inherited_min_runtime(
    quota: str,
    quota_of: Callable[[str], Quota | None],
    default: float,
    own: OwnMinRuntime = of_revocation,
) -> float:
    """The minimum runtime of ``quota``'s pods in seconds: its own annotation (``own`` reads
    which), else its nearest ancestor's (``quota_of``: a spec by name, None ending the walk),
    else ``default``."""
    seen: set[str] = set()
    spec = quota_of(quota)
    while spec is not None and spec.name not in seen:
        seconds = own(spec)
        if seconds is not None:
            return seconds
        seen.add(spec.name)
        spec = quota_of(spec.parent) if spec.parent else None
    return default


#: No pod of any quota is protected (no quota is known): the reference's rule.
NO_MIN_RUNTIMES = MinRuntimes(NO_MIN_RUNTIME)
