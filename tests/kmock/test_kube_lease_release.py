"""kube.lease.LeaderElector against KMock: releasing the coordination/v1 Lease on shutdown.

Rules (kube/lease.py): on shutdown the holder releases the Lease (no holder, a one-second
duration, its transition count kept), and only if it still holds it; a standby releases nothing.

Time runs on the fake clock of ``lease_election`` (the ``clock`` fixture of conftest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import kmock
from lease_election import NAME, NS, OTHER, Clock, foreign, puts, run_for

from elasticquota.kube.lease import LeaderElector

if TYPE_CHECKING:
    from conftest import Leases


async def test_the_holder_releases_the_lease_on_shutdown(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    foreign(leases)
    await run_for(elector, clock, 20)  # taken over: transitions 3 -> 4
    held = leases.get(NS, NAME)

    await elector.release()

    assert not elector.leading.is_set()
    released = puts(kmock)[-1]
    assert released["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
    assert released["spec"]["holderIdentity"] == ""
    assert released["spec"]["leaseDurationSeconds"] == 1
    assert released["spec"]["leaseTransitions"] == 4  # the count survives the release
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == ""


async def test_a_lease_taken_by_someone_else_meanwhile_is_not_released(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    await run_for(elector, clock, 1)
    foreign(leases, version="50")  # we were too slow to renew; the other replica took over
    before = len(puts(kmock))

    await elector.release()

    assert len(puts(kmock)) == before
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER
    assert not elector.leading.is_set()


async def test_a_standby_releases_nothing(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    foreign(leases)
    await run_for(elector, clock, 5)
    requests = len(kmock)

    await elector.release()

    assert len(kmock) == requests
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER
