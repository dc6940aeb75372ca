"""What the KMock tests of kube.lease.LeaderElector share: the Lease they elect through, the fake
clock of the election loop, and the loop run for a stretch of simulated time.

Time: the ``clock`` fixture (conftest) replaces the elector's (and its fence's)
``time.monotonic`` and ``asyncio.sleep`` with one ``Clock``, so that ``run()`` goes through
minutes of simulated time in milliseconds while its requests still go over HTTP to KMock. KMock
has no ``resourceVersion``: the ``leases`` fixture adds the check to ``PUT`` (see conftest).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import kmock

from elasticquota.kube.lease import LeaderElector

if TYPE_CHECKING:
    from conftest import Leases

NS, NAME, ME, OTHER = "quota-system", "elastic-quota-operator", "replica-a", "replica-b"
LEASE_URL = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{NAME}"
REAL_SLEEP = asyncio.sleep

LEASES = "coordination.k8s.io/v1/leases"

StatusBody = Callable[[int, str], dict[str, Any]]


class Clock:
    """Monotonic time for the elector; its sleeps advance it instead of waiting.

    A sleep that would pass the deadline parks the loop there instead (until it is cancelled), so
    ``run_for`` stops the election loop at exactly the simulated time it was given.
    """

    def __init__(self) -> None:
        self.now = 1000.0
        self.deadline = float("inf")
        self.parked = asyncio.Event()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        if self.now + delay > self.deadline:
            self.now = self.deadline
            self.parked.set()
            await asyncio.Event().wait()
        self.now += delay
        await REAL_SLEEP(0)


async def run_for(elector: LeaderElector, clock: Clock, seconds: float) -> None:
    """Run the election loop for ``seconds`` of simulated time (re-raising if it crashed)."""
    clock.deadline = clock.now + seconds
    clock.parked.clear()
    task = asyncio.create_task(elector.run())
    parked = asyncio.create_task(clock.parked.wait())
    try:
        await asyncio.wait({task, parked}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        assert task.done() or parked.done(), "the election loop neither slept nor ended"
    finally:
        for pending in (task, parked):
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
    if not task.cancelled():
        task.result()  # the loop must never end on its own: raise what ended it


def foreign(leases: Leases, version: str = "7", renew: str = "2024-05-01T10:00:00.000000Z") -> None:
    leases.put(
        NS,
        NAME,
        version,
        holderIdentity=OTHER,
        leaseDurationSeconds=15,
        acquireTime="2024-05-01T09:00:00.000000Z",
        renewTime=renew,
        leaseTransitions=3,
    )


def puts(server: kmock.KubernetesEmulator) -> list[dict[str, Any]]:
    return [request.data for request in server if request.method == kmock.method.PUT]
