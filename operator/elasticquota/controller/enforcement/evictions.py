"""What revocation and in-quota preemption share to evict: one rate, counted evictions, Events.

Both evict through ``Cluster.evict`` (the Eviction API, so PodDisruptionBudgets are honoured) at
most ``eviction_rate`` a second between them (one ``RateLimiter``, made by the runner), count each
eviction by quota, reason and outcome (``counted_eviction``), and tell the pod what happened in an
Event that names its uid when the eviction read it (``pod_involved``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.names import FAILED
from elasticquota.core.model.models import PodInfo
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult
from elasticquota.kube.fence import NotLeadingError


async def counted_eviction(
    cluster: Cluster, metrics: Metrics, quota: str, pod: PodInfo, reason: str
) -> EvictionResult:
    """Evict one pod of ``quota``, counting the outcome under ``reason`` (what decided it:
    ``over-use`` or ``preemption``); ``failed`` when it raises; an eviction not sent, in a dry
    run, is not counted. The outcome comes with the uid of the pod read (for its Events), and so
    does a failure of the request after the read (``EvictionError``)."""
    try:
        result = await cluster.evict(pod.namespace, pod.name, created=pod.created)
    except NotLeadingError:
        raise  # not sent: nothing to count
    except Exception:
        metrics.eviction(quota, reason, FAILED)
        raise
    if result.outcome is not EvictionOutcome.NOT_SENT:
        metrics.eviction(quota, reason, result.outcome.value)
    return result


def pod_involved(pod: PodInfo, uid: str) -> dict[str, str]:
    """The ``involvedObject`` of an Event about ``pod``, with its uid when known (``""``: not
    read): ``kubectl describe pod`` lists only the Events that name the pod's uid."""
    involved = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
    if uid:
        involved["uid"] = uid
    return involved


#: How far below a whole token a refill may fall by float error alone (0.2 s at 5 a second can
#: read as 0.99999999999994 tokens): within it the token counts as whole. Else the wait for the
#: rest (1e-14 s) is shorter than a clock shows: on a clock that moves only as far as a sleep
#: asks (a test's fake loop time) the bucket waited for ever, on a coarse one it spins to the
#: next tick.
TOKEN_TOLERANCE = 1e-9


class RateLimiter:
    """A token bucket: ``rate`` acquisitions per second, bursts of up to ``rate`` (at least one).

    A fractional rate is one acquisition every ``1 / rate`` seconds (0.2: one every 5 s): the
    bucket holds at least one token, else a rate below 1 could never fill it and every
    acquisition would wait forever.
    """

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise ValueError(f"a rate limiter needs a positive rate, got {rate!r}")
        self._rate = rate
        self._capacity = max(1.0, rate)
        self._tokens = self._capacity
        self._clock = clock
        self._stamp = clock()

    async def acquire(self) -> None:
        while True:
            now = self._clock()
            self._tokens = min(self._capacity, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            if self._tokens >= 1 - TOKEN_TOLERANCE:
                self._tokens = max(0.0, self._tokens - 1)
                return
            await asyncio.sleep((1 - self._tokens) / self._rate)
