"""Leader election over a coordination.k8s.io/v1 Lease: exactly one active replica writes.

Every replica watches and keeps its memory current; only the holder of the Lease writes. The holder
renews every third of the lease duration. A standby looks at the Lease every retry period (0.5 s by
default) and takes over when it has seen the same lease record for longer than the duration
(measured on its own monotonic clock, like client-go, so that clock skew between nodes cannot cause
two leaders): at most about two retry periods after the holder's last renewal expired. On
shutdown the holder releases the Lease so that the standby takes over at once.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import describe

logger = logging.getLogger(__name__)


def _micro_time(moment: datetime.datetime | None = None) -> str:
    moment = (moment or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquire, renew and release one Lease; ``leading`` is set while this replica holds it."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        duration: float = 15.0,
        retry_period: float | None = None,
    ) -> None:
        """``retry_period``: seconds between a standby's attempts (default: a fifth of
        ``duration``)."""
        self._leases = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration = duration
        self.retry_period = duration / 5 if retry_period is None else retry_period
        self.leading = asyncio.Event()
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0

    async def run(self) -> None:
        """Forever: try to acquire or renew, then sleep (shorter while standing by)."""
        while True:
            try:
                holding = await self._acquire_or_renew()
            except (TimeoutError, ApiException, OSError, aiohttp.ClientError) as error:
                logger.warning("leader lease %s/%s: %s", self.namespace, self.name, describe(error))
                holding = False
            self._set_leading(holding)
            await asyncio.sleep(self.duration / 3 if holding else self.retry_period)

    def _set_leading(self, holding: bool) -> None:
        if holding and not self.leading.is_set():
            logger.info("became the active replica (%s)", self.identity)
            self.leading.set()
        elif not holding and self.leading.is_set():
            logger.warning("lost the leader lease; standing by (%s)", self.identity)
            self.leading.clear()

    async def _acquire_or_renew(self) -> bool:
        try:
            lease = await self._leases.read_namespaced_lease(self.name, self.namespace)
        except ApiException as error:
            if error.status != 404:
                raise
            return await self._create()
        spec = lease.spec
        holder = spec.holder_identity or ""
        record = (holder, str(spec.renew_time))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        expired = time.monotonic() - self._observed_at > (spec.lease_duration_seconds or 0)
        if holder and holder != self.identity and not expired:
            return False
        transitions = (spec.lease_transitions or 0) + (holder != self.identity)
        return await self._replace(
            lease.metadata.resource_version, transitions, holder, spec.acquire_time
        )

    def _spec(
        self, transitions: int, acquired: bool, acquire_time: datetime.datetime | None = None
    ) -> dict[str, Any]:
        now = _micro_time()
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.duration)),
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
            if error.status == 409:
                return False
            raise
        return True

    async def _replace(
        self,
        resource_version: str,
        transitions: int,
        holder: str,
        acquire_time: datetime.datetime | None = None,
    ) -> bool:
        body = {
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": resource_version,
            },
            "spec": self._spec(transitions, holder != self.identity, acquire_time),
        }
        try:
            await self._leases.replace_namespaced_lease(self.name, self.namespace, body)
        except ApiException as error:
            if error.status == 409:
                return False
            raise
        return True

    async def release(self) -> None:
        """Give the Lease up (on shutdown) so that a standby takes over without waiting."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        try:
            lease = await self._leases.read_namespaced_lease(self.name, self.namespace)
            if lease.spec.holder_identity != self.identity:
                return
            body = {
                "metadata": {
                    "name": self.name,
                    "namespace": self.namespace,
                    "resourceVersion": lease.metadata.resource_version,
                },
                "spec": {
                    "holderIdentity": "",
                    "leaseDurationSeconds": 1,
                    "renewTime": None,
                    "leaseTransitions": lease.spec.lease_transitions,
                },
            }
            await self._leases.replace_namespaced_lease(self.name, self.namespace, body)
        except (ApiException, OSError, aiohttp.ClientError) as error:
            logger.warning("could not release the leader lease: %s", describe(error))
