"""kube.lease.LeaderElector against KMock: two replicas on one Lease, never leading at once.

Rule (kube/lease.py): a standby takes over only once the record it last saw has gone unchanged for
longer than its duration on the standby's own clock; the holder's fence has closed by then (it
closes ``renew_deadline`` after the start of its last renewal, and the record's duration is at
least the holder's own, whole seconds rounded up). That holds for a Lease deleted by hand too: a
standby creates it again only once every look has found it missing for a lease duration.

Each test drives the holder and the standby on one fake clock (``lease_election``), the standby in
small steps, and checks at each step that it does not lead while the holder's fence is open.

Time runs on the fake clock of ``lease_election`` (the ``clock`` fixture of conftest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import kmock
import pytest
from kubernetes_asyncio import client
from lease_election import LEASES, ME, NAME, NS, OTHER, Clock, run_for

from elasticquota.kube.lease import LeaderElector

if TYPE_CHECKING:
    from conftest import Leases


async def standby_takeover(
    holder: LeaderElector, standby: LeaderElector, clock: Clock, seconds: float
) -> float | None:
    """Run ``standby`` alone in steps of its retry period for ``seconds``; the (fake) time it
    became the active replica, None if it did not. Fails if it leads while ``holder``'s fence
    is still open."""
    start = clock.now
    while clock.now - start < seconds:
        await run_for(standby, clock, standby.retry_period)
        if standby.leading.is_set():
            assert not holder.fence.is_fresh(), (
                f"the standby leads at {clock.now - 1000:g} s while the holder's fence is open "
                f"for {holder.fence.remaining():g} s more"
            )
            return clock.now - 1000
    return None


@pytest.mark.parametrize(
    ("duration", "renew_deadline", "recorded"), [(2.5, 2.4, 3), (1.4, 1.3, 2), (15.0, 10.0, 15)]
)
async def test_the_recorded_duration_is_never_shorter_than_the_holders_fence(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    leases: Leases,
    clock: Clock,
    duration: float,
    renew_deadline: float,
    recorded: int,
) -> None:
    """Durations are seconds (1 to 3600) the Lease records whole: rounded down, a 2.5-s Lease
    was recorded as 2 s and a standby took over while the holder's 2.4-s fence was still open."""
    holder, standby = (
        LeaderElector(api, NS, NAME, identity, duration, 0.1, renew_deadline)
        for identity in (ME, OTHER)
    )
    await run_for(holder, clock, 0.01)  # created at 0; then the holder is gone

    took_over = await standby_takeover(holder, standby, clock, recorded + 1)

    assert took_over is not None
    assert kmock[1].data["spec"]["leaseDurationSeconds"] == recorded  # the holder's creation


async def test_a_lease_deleted_by_hand_is_not_recreated_while_its_holder_may_still_write(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, leases: Leases, clock: Clock
) -> None:
    """kubectl delete lease: the standby creates the Lease only once it has found it missing for
    15 s, not at its next look: the holder, which does not know yet, writes until it renews (at
    5 s) or its fence closes (at 10 s)."""
    holder = LeaderElector(api, NS, NAME, ME, duration=15.0, retry_period=0.5)
    standby = LeaderElector(api, NS, NAME, OTHER, duration=15.0, retry_period=0.5)
    await run_for(holder, clock, 0.01)
    await run_for(standby, clock, 1)  # it sees the holder's record
    assert not standby.leading.is_set()
    del kmock.objects[LEASES, NS, NAME]

    took_over = await standby_takeover(holder, standby, clock, 20)

    assert took_over is not None and took_over > 15
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER


async def test_a_lease_deleted_by_hand_is_recreated_by_its_holder_and_kept(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, leases: Leases, clock: Clock
) -> None:
    """The holder's next renewal finds the Lease gone and creates it again; the standby, which
    saw the deletion, sees the new record and keeps standing by."""
    holder = LeaderElector(api, NS, NAME, ME, duration=15.0, retry_period=0.5)
    standby = LeaderElector(api, NS, NAME, OTHER, duration=15.0, retry_period=0.5)
    await run_for(holder, clock, 0.01)
    await run_for(standby, clock, 1)
    del kmock.objects[LEASES, NS, NAME]
    await run_for(standby, clock, 1)

    for _ in range(6):  # the holder renews (recreates) every 5 s; the standby looks in between
        await run_for(holder, clock, 0.01)
        assert await standby_takeover(holder, standby, clock, 4.9) is None

    assert holder.leading.is_set() and holder.fence.is_fresh()
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == ME


async def test_a_deleted_lease_is_waited_out_from_its_deletion_not_from_a_renewal_seen_long_ago(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, leases: Leases, clock: Clock
) -> None:
    """The standby last saw the holder's record at 1 s (its looks failed since, say), while the
    holder kept renewing until 25 s; deleted then, the Lease is created again by the standby only
    once every look has found it missing for a lease duration, not at once because the record it
    saw is older than that."""
    holder = LeaderElector(api, NS, NAME, ME, duration=15.0, retry_period=0.5)
    standby = LeaderElector(api, NS, NAME, OTHER, duration=15.0, retry_period=0.5)
    await run_for(holder, clock, 0.01)
    await run_for(standby, clock, 1)
    await run_for(holder, clock, 24)  # renewed every 5 s, unseen by the standby
    del kmock.objects[LEASES, NS, NAME]
    deleted = clock.now - 1000

    took_over = await standby_takeover(holder, standby, clock, 20)

    assert took_over is not None and took_over - deleted > 15
