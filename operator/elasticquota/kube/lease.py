"""Leader election over a coordination.k8s.io/v1 Lease: exactly one active replica writes.

Every replica watches and keeps its memory current; only the holder of the Lease writes. client-go's
contract: lease duration > renew deadline > retry period. The holder renews every third of the
duration (at most half the renew deadline); a renewal that fails is tried again every retry period.
A holder that has not renewed within the renew deadline (measured from the start of its last
successful renewal) stops leading: its ``Fence`` (``kube.fence``) closes at that very moment,
whatever its requests are doing, and every write of the operator goes through the fence
(``kube.client``: a write checks it right before it is sent and is abandoned when it closes).
Every request of the election is bounded by the renew deadline (for the holder: by what is left
of it).

A standby looks at the Lease every retry period (0.5 s by default) and takes over when it has seen
the same lease record for longer than the duration (measured on its own monotonic clock, like
client-go, so that clock skew between nodes cannot cause two leaders): at most about two retry
periods after the holder's last renewal expired. The record it saw was written after the holder
*started* that renewal, so the old holder's fence closed at least ``duration - renew deadline``
seconds before the standby can write: a write already on its way must reach the API server within
that margin (5 s by default). The Lease records the duration in whole seconds rounded up, never
less than the holder's own. A Lease deleted by hand may still be held: its holder knows nothing of
the deletion before its next renewal (which creates the Lease again) and writes on. So only the
holder, and a replica that has seen no Lease yet (the first start), create a missing Lease at once;
any other replica once every look has found it missing for a lease duration.

A renewal whose write conflicts (409 on the ``resourceVersion`` it read: something else, a label
tool say, wrote the Lease in between) has not lost the Lease: as in client-go, the holder reads it
again and, still its holder, writes again (``RENEWAL_TRIES`` in all); conflicts that persist are a
failed renewal, tried again every retry period until the renew deadline. Only a Lease that
another replica holds is lost at once. The fence is unchanged by this: it opens only on a
renewal that succeeded, from the start of its attempt, and each attempt is bounded by what is
left of it.

A replica that finds the Lease held under its own identity (the pod name: a restarted container)
takes it back at once. On shutdown the holder releases the Lease so that the standby takes over
within a retry period.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import describe
from elasticquota.kube.fence import Fence
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)


def _micro_time(moment: datetime.datetime | None = None) -> str:
    moment = (moment or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_seconds(duration: float) -> int:
    """The whole seconds a Lease records for ``duration``: rounded up, never below it."""
    return max(1, math.ceil(duration))


#: Writes one renewal tries, each after a fresh read, while they conflict with other writes.
RENEWAL_TRIES = 3


class RenewalConflictError(Exception):
    """A renewal whose writes kept conflicting with other writes of the Lease while this replica
    was still its holder: a failed renewal (tried again until the renew deadline), not a lost
    Lease."""


#: ``on_renew_failure(reason)``: ``error`` (the API server refused or could not be reached),
#: ``timeout`` (no answer within the renew deadline) or ``lost`` (another replica holds it).
RenewFailureObserver = Callable[[str], None]


class LeaderElector:
    """Acquire, renew and release one Lease; ``leading`` is set while this replica holds it, and
    ``fence`` is open while its last renewal is younger than the renew deadline."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        duration: float = 15.0,
        retry_period: float | None = None,
        renew_deadline: float | None = None,
        on_renew_failure: RenewFailureObserver | None = None,
        fence: Fence | None = None,
    ) -> None:
        """``retry_period``: seconds between a standby's attempts (default: a fifth of
        ``duration``); ``renew_deadline``: default two thirds of ``duration``. ``api`` should be
        a client of the elector's own, so that its requests never queue behind the writes;
        ``fence``: the one the writers' client consults (default: a new one)."""
        self._leases = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration = duration
        self.retry_period = duration / 5 if retry_period is None else retry_period
        self.renew_deadline = duration * 2 / 3 if renew_deadline is None else renew_deadline
        self.renew_interval = min(duration / 3, self.renew_deadline / 2)
        self.leading = asyncio.Event()
        self.fence = fence or Fence(self.renew_deadline)
        self.fence.renew_deadline = self.renew_deadline
        self._on_renew_failure = on_renew_failure or (lambda reason: None)
        self._renew_failing = False
        #: Failed looks at the Lease, logged once per outage (one WARNING, one INFO at the end).
        self._outage = OutageLog(logger, f"leader lease {namespace}/{name}")
        #: The renew times of this process's latest writes (sent; answered or not).
        self._written: collections.deque[str] = collections.deque(maxlen=8)
        #: The last record seen (holder, renew time), since when (monotonic), and its duration.
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._observed_duration = 0
        self._missing_since: float | None = None  # every look since found no Lease

    async def run(self) -> None:
        """Forever: try to acquire or renew, then sleep (shorter while standing by or failing)."""
        while True:
            await self._attempt()
            await asyncio.sleep(self._pause())

    async def _attempt(self) -> None:
        """One acquisition or renewal, bounded by the renew deadline (a holder: what is left)."""
        if self.leading.is_set() and not self.fence.is_fresh():
            self._set_leading(False, f"not renewed within {self.renew_deadline:g} s")
        was_leading = self.leading.is_set()
        started = time.monotonic()
        try:
            async with asyncio.timeout(
                self.fence.remaining() if was_leading else self.renew_deadline
            ):
                holding = await self._acquire_or_renew()
        except (
            TimeoutError,
            ApiException,
            OSError,
            aiohttp.ClientError,
            RenewalConflictError,
        ) as error:
            self._outage.failed(self.identity, error)
            self._missing_since = None  # not seen: the Lease may have been there meanwhile
            if was_leading:
                self._on_renew_failure("timeout" if isinstance(error, TimeoutError) else "error")
                self._renew_failing = True
                if self.fence.is_fresh():
                    return  # tried again every retry period until the deadline
            self._set_leading(False, f"not renewed within {self.renew_deadline:g} s")
            return
        self._renew_failing = False
        self._outage.succeeded()
        if holding:
            self.fence.renewed(started)
        elif was_leading:
            self._on_renew_failure("lost")
        self._set_leading(holding, "another replica holds it")

    def _pause(self) -> float:
        """Standing by: a retry period. Holding: the renew interval, but at most half of what is
        left of the deadline (a slow renewal leaves the next one time to finish); failing: a
        retry period, until the deadline."""
        if not self.leading.is_set():
            return self.retry_period
        if self._renew_failing:
            return min(self.retry_period, self.fence.remaining())
        return min(self.renew_interval, self.fence.remaining() / 2)

    def _set_leading(self, holding: bool, why: str = "") -> None:
        if holding and not self.leading.is_set():
            logger.info("became the active replica (%s)", self.identity)
            self.leading.set()
        elif not holding:
            self.fence.close()
            if self.leading.is_set():
                logger.warning(
                    "lost the leader lease (%s): every write stopped; standing by (%s)",
                    why,
                    self.identity,
                )
                self.leading.clear()

    async def _acquire_or_renew(self) -> bool:
        """Whether this replica holds the Lease, after a look at it and, when it is free, expired
        or ours, a write. A renewal whose write conflicts looks and writes again, ``RENEWAL_TRIES``
        in all (``RenewalConflictError`` after the last)."""
        for _ in range(RENEWAL_TRIES - 1):
            try:
                return await self._look_and_write()
            except RenewalConflictError as conflict:
                logger.debug("%s; reading the Lease again", conflict)
        return await self._look_and_write()

    async def _look_and_write(self) -> bool:
        try:
            lease = await self._leases.read_namespaced_lease(self.name, self.namespace)
        except ApiException as error:
            if error.status != 404:
                raise
            return False if self._missing_may_be_held() else await self._create()
        self._missing_since = None
        spec = lease.spec
        holder = spec.holder_identity or ""
        self._check_identity_is_ours_alone(holder, spec.renew_time)
        self._observe((holder, str(spec.renew_time)), spec.lease_duration_seconds or 0)
        if self._held_by_another():
            return False
        transitions = (spec.lease_transitions or 0) + (holder != self.identity)
        return await self._replace(lease.metadata, transitions, holder, spec.acquire_time)

    def _observe(self, record: tuple[str, str], duration: int) -> None:
        """The record seen now, and the duration it gives; its clock starts when it changed."""
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        self._observed_duration = duration

    def _held_by_another(self) -> bool:
        """Whether the last record seen names another replica and has not gone unchanged for
        longer than its duration on this replica's clock."""
        if self._observed is None:
            return False
        holder = self._observed[0]
        unchanged = time.monotonic() - self._observed_at
        return bool(holder) and holder != self.identity and unchanged <= self._observed_duration

    def _missing_may_be_held(self) -> bool:
        """Whether a Lease found missing may still be held (see the module's docstring): until
        every look has found it missing for a lease duration (the last seen, at least ours)."""
        if self.leading.is_set() or self._observed is None:
            return False
        now = time.monotonic()
        if self._missing_since is None:
            self._missing_since = now
        duration = max(self._observed_duration, lease_seconds(self.duration))
        return now - self._missing_since <= duration

    def _check_identity_is_ours_alone(
        self, holder: str, renew_time: datetime.datetime | None
    ) -> None:
        """While leading, the Lease holds a renew time this process wrote; another one under
        this identity means a second process has it (both would lead): said loudly."""
        if not self.leading.is_set() or holder != self.identity or renew_time is None:
            return
        if self._written and _micro_time(renew_time) not in self._written:
            logger.error(
                "another process renews the leader Lease %s/%s under this replica's identity "
                "%r: both act as the active replica. Give every replica an identity of its own "
                "(--identity, ELASTIC_QUOTA_IDENTITY, POD_NAME)",
                self.namespace,
                self.name,
                self.identity,
            )

    def _spec(
        self, transitions: int, acquired: bool, acquire_time: datetime.datetime | None = None
    ) -> dict[str, Any]:
        now = _micro_time()
        self._written.append(now)
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": lease_seconds(self.duration),
            "renewTime": now,
            "leaseTransitions": transitions,
        }
        if acquired:
            spec["acquireTime"] = now
        elif acquire_time is not None:  # a replace drops what it does not send: keep it
            spec["acquireTime"] = _micro_time(acquire_time)
        return spec

    async def _create(self) -> bool:
        body = {
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self._spec(transitions=0, acquired=True),
        }
        try:
            await self._leases.create_namespaced_lease(self.namespace, body)
        except ApiException as error:
            if error.status == 409:  # another replica created it first: held, by it
                created = ("(created by another replica)", str(time.monotonic()))
                self._observe(created, lease_seconds(self.duration))
                return False
            raise
        return True

    def _metadata(self, read: client.V1ObjectMeta) -> dict[str, Any]:
        """The metadata of a replace of the Lease ``read``: its version, and the labels,
        annotations, owner references and finalizers others put on it (a replace drops what it
        does not send)."""
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "resourceVersion": read.resource_version,
        }
        kept = (
            ("labels", read.labels),
            ("annotations", read.annotations),
            ("ownerReferences", read.owner_references),
            ("finalizers", read.finalizers),
        )
        for key, value in kept:
            if value:
                metadata[key] = self._leases.api_client.sanitize_for_serialization(value)
        return metadata

    async def _replace(
        self,
        read: client.V1ObjectMeta,
        transitions: int,
        holder: str,
        acquire_time: datetime.datetime | None = None,
    ) -> bool:
        body = {
            "metadata": self._metadata(read),
            "spec": self._spec(transitions, holder != self.identity, acquire_time),
        }
        try:
            await self._leases.replace_namespaced_lease(self.name, self.namespace, body)
        except ApiException as error:
            if error.status != 409:
                raise
            if holder == self.identity:  # ours: written by someone else meanwhile, not taken
                raise RenewalConflictError(
                    f"renewal of the leader lease conflicted: {describe(error)}"
                ) from error
            return False  # another replica was faster
        return True

    async def release(self) -> None:
        """Give the Lease up (on shutdown) so that a standby takes over without waiting."""
        if not self.leading.is_set():
            return
        self.fence.close()
        self.leading.clear()
        try:
            async with asyncio.timeout(self.renew_deadline):
                await self._release()
        except (TimeoutError, ApiException, OSError, aiohttp.ClientError) as error:
            logger.warning("could not release the leader lease: %s", describe(error))

    async def _release(self) -> None:
        """Clear the holder (if still this replica), with the version it read."""
        lease = await self._leases.read_namespaced_lease(self.name, self.namespace)
        if lease.spec.holder_identity != self.identity:
            return
        body = {
            "metadata": self._metadata(lease.metadata),
            "spec": {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": None,
                "leaseTransitions": lease.spec.lease_transitions,
            },
        }
        await self._leases.replace_namespaced_lease(self.name, self.namespace, body)
        logger.info("released the leader lease (%s)", self.identity)
