"""kube.lease.LeaderElector against KMock: failed renewals, the renew deadline and errors.

Rules (kube/lease.py): a failed renewal is tried again every retry period, and a holder that has
not renewed within the renew deadline (two thirds of the duration by default; each attempt is
bounded by what is left of it) stops leading and closes its fence, before a standby could take
over; a Lease another replica took over is a lost renewal; a second process renewing under the
same identity is reported; API and connection errors never stop the loop, and failed looks at
the Lease are logged once per outage.

Time runs on the fake clock of ``lease_election`` (the ``clock`` fixture of conftest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import kmock
import pytest
from kmock import KubernetesObjectNotFoundError
from kubernetes_asyncio import client
from lease_election import (
    LEASES,
    ME,
    NAME,
    NS,
    REAL_SLEEP,
    Clock,
    StatusBody,
    foreign,
    puts,
    run_for,
)

from elasticquota.kube import lease as lease_module
from elasticquota.kube.lease import LeaderElector

if TYPE_CHECKING:
    from conftest import Leases


async def test_a_failed_renewal_is_tried_again_every_retry_period_and_the_holder_keeps_leading(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    failures: list[str],
    leases: Leases,
    clock: Clock,
    k8s_status: StatusBody,
) -> None:
    reads: list[tuple[float, bool]] = []

    def read(request: kmock.Request) -> dict[str, Any]:
        reads.append((clock.now - 1000, elector.leading.is_set()))
        if not leases.exists(NS, NAME):
            raise KubernetesObjectNotFoundError()
        return leases.get(NS, NAME)

    kmock["get", kmock.resource(LEASES)][2:3] << 500 << k8s_status(500, "InternalError")
    kmock["get", kmock.resource(LEASES)] << read
    await run_for(elector, clock, 20)

    # created at 0, renewed at 5, [the 500 at 10], renewed one retry period (3 s) later, ...
    assert reads == [(0, False), (5, True), (13, True), (18, True)]
    assert failures == ["error"]
    assert elector.leading.is_set()  # within the renew deadline (10 s) all along
    assert leases.get(NS, NAME)["spec"]["leaseTransitions"] == 0


async def test_after_a_slow_renewal_the_next_one_comes_sooner(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    """The renewal at 5 s takes 4 s: its fence is open until 15 s (from its start), so the next
    renewal starts half-way through what is left (at 12 s), not a renew interval later (14 s)."""
    started: list[float] = []

    def read(request: kmock.Request) -> dict[str, Any]:
        started.append(clock.now - 1000)
        if not leases.exists(NS, NAME):
            raise KubernetesObjectNotFoundError()
        if len(started) == 2:
            clock.now += 4  # the API server answers four seconds late
        return leases.get(NS, NAME)

    kmock["get", kmock.resource(LEASES)] << read
    await run_for(elector, clock, 12.5)

    assert started == [0, 5, 12]
    assert elector.leading.is_set()


async def test_a_second_process_under_the_same_identity_is_reported(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    leases: Leases,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two processes started with one identity (no --identity, one host): both would lead."""
    await run_for(elector, clock, 6)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # its own renewals
    leases.put(
        NS, NAME, "40", holderIdentity=ME, leaseDurationSeconds=15, leaseTransitions=0,
        renewTime="2024-05-01T10:00:00.000000Z",
    )  # fmt: skip  # the other process's renewal

    await run_for(elector, clock, 5)

    (error,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "another process renews the leader Lease" in error.getMessage()
    assert repr(ME) in error.getMessage()


async def test_a_holder_that_cannot_renew_stops_leading_at_the_renew_deadline(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    failures: list[str],
    clock: Clock,
    k8s_status: StatusBody,
) -> None:
    """Created at 0: renewals fail from 5 s on; the fence closes at 10 s (the renew deadline), five
    seconds before a standby could see the Lease expire (15 s), and the holder stands by."""
    kmock["get", kmock.resource(LEASES)][1:] << 500 << k8s_status(500, "InternalError")
    await run_for(elector, clock, 9.9)
    assert elector.leading.is_set() and elector.fence.is_fresh()
    assert elector.fence.remaining() == pytest.approx(0.1)

    await run_for(elector, clock, 0.2)

    assert not elector.leading.is_set()
    assert not elector.fence.is_fresh()
    assert set(failures) <= {"error", "timeout"} and len(failures) >= 2


async def test_a_renewal_that_hangs_is_abandoned_at_the_renew_deadline(
    kmock: kmock.KubernetesEmulator,
    api: client.ApiClient,
    leases: Leases,
    clock: Clock,
) -> None:
    """The link went silent: no request of the holder answers. Each attempt is bounded by what is
    left of the deadline (real seconds here: 0.5, then 0.25), so the holder stops at 1 s."""
    failures: list[str] = []
    elector = LeaderElector(
        api, NS, NAME, ME, duration=1.5, retry_period=0.25, renew_deadline=1.0,
        on_renew_failure=failures.append,
    )  # fmt: skip
    kmock["get", kmock.resource(LEASES)][1:] << (lambda request: REAL_SLEEP(30))
    await run_for(elector, clock, 0.9)
    assert elector.leading.is_set()

    await run_for(elector, clock, 0.2)

    assert not elector.leading.is_set()
    assert failures and set(failures) == {"timeout"}
    assert puts(kmock) == []  # nothing renewed it


async def test_a_lease_taken_over_by_another_replica_is_a_lost_renewal(
    elector: LeaderElector, failures: list[str], leases: Leases, clock: Clock
) -> None:
    await run_for(elector, clock, 1)
    foreign(leases, version="50")

    await run_for(elector, clock, 6)

    assert not elector.leading.is_set() and not elector.fence.is_fresh()
    assert failures == ["lost"]


async def test_a_dropped_connection_does_not_stop_the_election_loop(
    kmock: kmock.KubernetesEmulator, elector: LeaderElector, leases: Leases, clock: Clock
) -> None:
    def drop(request: kmock.Request) -> None:
        raw = request._raw_request
        assert raw is not None and raw.transport is not None
        raw.transport.close()  # the client sees the server disconnect

    # aiohttp itself resends idempotent requests (GET, PUT) once on a dropped keep-alive
    # connection; a POST it cannot resend: the creation of the Lease is the exposed request.
    kmock["post", kmock.resource(LEASES)][:1] << drop
    await run_for(elector, clock, 20)  # raises if the loop died

    get, post = kmock.method.GET, kmock.method.POST
    assert [r.method for r in kmock][:3] == [get, post, get]  # dropped, then looked again
    assert elector.leading.is_set()  # the next round created it


async def test_failed_looks_at_the_lease_are_logged_once_per_outage(
    kmock: kmock.KubernetesEmulator,
    elector: LeaderElector,
    leases: Leases,
    clock: Clock,
    k8s_status: StatusBody,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A standby that cannot read the Lease for a while: one WARNING, then one INFO (not a line
    per retry period)."""
    foreign(leases)
    kmock["get", kmock.resource(LEASES)][0:3] << 500 << k8s_status(500, "InternalError")
    caplog.set_level("DEBUG", logger=lease_module.__name__)
    await run_for(elector, clock, 14)  # a look every 3 s: three fail, the fourth reads it
    lines = [
        (r.levelname, r.getMessage()) for r in caplog.records if r.name == lease_module.__name__
    ]
    warnings = [message for level, message in lines if level == "WARNING"]
    infos = [message for level, message in lines if level == "INFO" and "again" in message]
    assert len(warnings) == 1 and "failing" in warnings[0]
    assert len(infos) == 1
