"""kube.lease.LeaderElector against KMock: how a replica comes to hold the coordination/v1 Lease
and keeps it.

Rules (kube/lease.py): a missing Lease is created with this replica as holder; the holder renews it
every third of the duration, keeping its acquire time and transition count; a replica that finds
the Lease under its own identity (a restarted container) takes it at once; a standby polls every
fifth of the duration and takes a foreign Lease over only after it has seen the same record
(holder, renew time) unchanged for longer than the Lease's duration on its *own* monotonic clock
(so the timestamps in the Lease, and clock skew, never matter); a released Lease (no holder) is
taken at once; a replace that lost the race (409 on ``resourceVersion``) or a creation that lost
it leaves the replica standing by.

Time runs on the fake clock of ``lease_election`` (the ``clock`` fixture of conftest).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import kmock
from kmock import KubernetesError
from kubernetes_asyncio import client
from lease_election import LEASE_URL, LEASES, ME, NAME, NS, OTHER, Clock, foreign, puts, run_for

from elasticquota.kube.lease import LeaderElector

if TYPE_CHECKING:
    from conftest import Leases


async def test_a_missing_lease_is_created_with_this_replica_as_holder(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    await run_for(elector, clock, 1)

    assert elector.leading.is_set()
    get, post = list(kmock)[:2]
    assert (get.method, get.url.path) == (kmock.method.GET, LEASE_URL)
    assert (post.method, post.url.path) == (
        kmock.method.POST,
        f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases",
    )
    spec = post.data["spec"]
    assert post.data["metadata"] == {"name": NAME, "namespace": NS}
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == (ME, 15)
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"]
    assert spec["renewTime"].endswith("Z") and "." in spec["renewTime"]  # MicroTime


async def test_the_holder_renews_every_third_of_the_duration(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    await run_for(elector, clock, 30.5)

    renewals = puts(kmock)
    assert len(renewals) == 6  # at 5, 10, ..., 30 s
    created = kmock[1].data["spec"]
    lease = leases.get(NS, NAME)
    assert lease["spec"]["holderIdentity"] == ME
    assert lease["spec"]["leaseTransitions"] == 0  # renewing is no transition
    assert lease["spec"]["acquireTime"] == created["acquireTime"]  # still acquired back then
    assert lease["metadata"]["resourceVersion"] == "6"  # each renewal replaced the last version
    assert elector.leading.is_set()


async def test_a_fresh_foreign_lease_is_not_taken_over(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    foreign(leases)
    await run_for(elector, clock, 14.9)

    assert not elector.leading.is_set()
    assert puts(kmock) == []
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER


async def test_an_expired_foreign_lease_is_taken_over(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    foreign(leases)
    await run_for(elector, clock, 14.9)
    await run_for(elector, clock, 5)

    assert elector.leading.is_set()
    (takeover, *_) = puts(kmock)
    assert takeover["metadata"]["resourceVersion"] == "7"  # replaces exactly what it saw
    spec = takeover["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == (ME, 4)
    assert spec["acquireTime"] == spec["renewTime"]


async def test_a_standby_takes_over_within_two_retry_periods_of_the_expiry(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, leases: Leases, clock: Clock
) -> None:
    elector = LeaderElector(api, NS, NAME, ME, duration=15.0, retry_period=0.5)
    foreign(leases)
    await run_for(elector, clock, 14.9)
    assert not elector.leading.is_set()
    await run_for(elector, clock, 1.0)  # a fifth of the duration (3 s) would still be waiting
    assert elector.leading.is_set()
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == ME


async def test_a_lease_its_holder_keeps_renewing_is_never_taken_over(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    for second in range(0, 60, 10):
        foreign(leases, version=str(10 + second), renew=f"2024-05-01T10:00:{second:02d}.000000Z")
        await run_for(elector, clock, 10)

    assert not elector.leading.is_set()
    assert puts(kmock) == []


async def test_expiry_is_judged_on_the_local_clock_not_the_lease_timestamps(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    """A renew time long past (or a skewed clock) does not make a Lease expired at first sight."""
    foreign(leases, renew="2001-01-01T00:00:00.000000Z")
    await run_for(elector, clock, 10)
    assert not elector.leading.is_set()


async def test_a_released_lease_is_taken_at_once(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    leases.put(NS, NAME, "9", holderIdentity="", leaseDurationSeconds=1, leaseTransitions=3)
    await run_for(elector, clock, 0.1)

    assert elector.leading.is_set()
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == ME
    assert leases.get(NS, NAME)["spec"]["leaseTransitions"] == 4


async def test_a_replace_that_lost_the_race_leaves_the_replica_standing_by(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    leases.put(NS, NAME, "9", holderIdentity="", leaseDurationSeconds=1)

    def read_then_other_wins(request: kmock.Request) -> dict[str, Any]:
        seen = copy.deepcopy(leases.get(NS, NAME))
        foreign(leases, version="10")  # the other replica's replace lands between GET and PUT
        return seen

    kmock["get", kmock.resource(LEASES)][:1] << read_then_other_wins
    await run_for(elector, clock, 0.1)

    assert not elector.leading.is_set()
    assert [p["metadata"]["resourceVersion"] for p in puts(kmock)] == ["9"]  # refused with 409
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER


async def test_a_creation_that_lost_the_race_leaves_the_replica_standing_by(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    def other_created_it_first(request: kmock.Request) -> None:
        foreign(leases)
        raise KubernetesError(409, "AlreadyExists", "leases already exists")

    kmock["post", kmock.resource(LEASES)] << other_created_it_first
    await run_for(elector, clock, 0.1)

    assert not elector.leading.is_set()
    assert leases.get(NS, NAME)["spec"]["holderIdentity"] == OTHER


async def test_a_replica_that_finds_the_lease_under_its_own_identity_takes_it_at_once(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    """A restarted container of the same pod: the Lease still names it, renewed just now."""
    leases.put(
        NS, NAME, "12", holderIdentity=ME, leaseDurationSeconds=15, leaseTransitions=2,
        acquireTime="2024-05-01T09:00:00.000000Z", renewTime="2024-05-01T10:00:00.000000Z",
    )  # fmt: skip
    await run_for(elector, clock, 0.1)

    assert elector.leading.is_set() and elector.fence.is_fresh()
    spec = leases.get(NS, NAME)["spec"]
    assert spec["leaseTransitions"] == 2  # no transition: it was ours
    assert spec["acquireTime"].startswith("2024-05-01T09:00:00")
