"""kube.lease.LeaderElector against KMock: one active replica through a coordination/v1 Lease.

Rules (kube/lease.py): a missing Lease is created with this replica as holder; the holder renews it
every third of the duration, keeping its acquire time and transition count; a failed renewal is
tried again every retry period, and a holder that has not renewed within the renew deadline (two
thirds of the duration by default; each attempt is bounded by what is left of it) stops leading
and closes its fence, before a standby could take over; a replica that finds the Lease under its
own identity (a restarted container) takes it at once; a standby polls every fifth of the
duration and takes a foreign Lease over only after it has seen the same record (holder, renew
time) unchanged for longer than the Lease's duration on its *own* monotonic clock (so the
timestamps in the Lease, and clock skew, never matter); a released Lease (no holder) is taken at
once; a replace that lost the race (409 on ``resourceVersion``) or a creation that lost it leaves
the replica standing by; API and connection errors never stop the loop; on shutdown the holder
releases the Lease, and only if it still holds it.

Time: ``clock`` replaces the elector's ``time.monotonic`` and ``asyncio.sleep`` with one fake
clock, so that ``run()`` goes through minutes of simulated time in milliseconds while its requests
still go over HTTP to KMock. KMock has no ``resourceVersion``: the ``leases`` fixture adds the
check to ``PUT`` (see conftest).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import kmock
import pytest
from kmock import KubernetesError, KubernetesObjectNotFoundError
from kubernetes_asyncio import client

from elasticquota.kube import lease as lease_module
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


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(lease_module, "time", SimpleNamespace(monotonic=fake.monotonic))
    monkeypatch.setattr(
        lease_module,
        "asyncio",
        SimpleNamespace(sleep=fake.sleep, Event=asyncio.Event, timeout=asyncio.timeout),
    )
    return fake


@pytest.fixture
def failures() -> list[str]:
    """The reasons of the failed renewals the ``elector`` fixture reported, in order."""
    return []


@pytest.fixture
def elector(
    api: client.ApiClient, leases: Leases, clock: Clock, failures: list[str]
) -> LeaderElector:
    return LeaderElector(api, NS, NAME, ME, duration=15.0, on_renew_failure=failures.append)


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


# -- acquiring ------------------------------------------------------------------------------------


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


# -- failures -------------------------------------------------------------------------------------


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


# -- releasing ------------------------------------------------------------------------------------


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
