"""The way in: one reader per kind (Pod, ElasticQuota, ElasticQuotaProfile, Node) into memory.

Each kind is read by a :class:`~elasticquota.kube.reflector.Reflector` (list, then a
bounded watch, level-based relists) whose sink is the matching entry point of
:class:`~elasticquota.controller.state.ControllerState`: an object seen is parsed and stored, an
object deleted is dropped, and after every complete list the objects the list did not return are
dropped too. Once every kind has been listed completely the memory is ``synced``; until then no
loop writes.

Pods are listed last: the quotas, profiles and nodes first, then the engine builds the trees once,
and only then does the pod reader start, so that every listed pod is placed in its tree as it
arrives, in the reader's slices between yields. Listed together, every quota page would leave the
trees to be rebuilt, the pods only noted, and one rebuild placing 100,000 pods would hold the event
loop for seconds right after the listing.

Kopf's own watching is not used for these kinds: its index handlers hold every object's worker
behind a start-up barrier whose cost grows with the square of the object count, and its relists
never drop the objects that vanished while a watch was down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client

from elasticquota.controller.quotalog import ObjectKey
from elasticquota.controller.solving import rebuild_off_loop
from elasticquota.controller.state import ControllerState
from elasticquota.kube.quotas import PROFILES, QUOTAS
from elasticquota.kube.readerparts import Kind
from elasticquota.kube.reflector import Reflector

logger = logging.getLogger(__name__)

Body = Mapping[str, Any]


def _collection(group: str, version: str, plural: str) -> str:
    return f"/apis/{group}/{version}/{plural}" if group else f"/api/{version}/{plural}"


PODS = Kind("pods", _collection("", "v1", "pods"))
NODES = Kind("nodes", _collection("", "v1", "nodes"))
QUOTA_KIND = Kind("elasticquotas", _collection(*QUOTAS))
PROFILE_KIND = Kind("elasticquotaprofiles", _collection(*PROFILES))


@dataclass(frozen=True, slots=True)
class StateSink:
    """One kind's entry points into the controller's memory."""

    upsert: Callable[[Body], None]
    delete: Callable[[Body], None]
    relisted: Callable[[set[ObjectKey]], Coroutine[Any, Any, None]]


def sinks(state: ControllerState) -> dict[Kind, StateSink]:
    """Each kind's reader feeds these."""
    return {
        QUOTA_KIND: StateSink(state.on_quota, state.on_quota_deleted, state.forget_quotas_except),
        PROFILE_KIND: StateSink(
            state.on_profile, state.on_profile_deleted, state.forget_profiles_except
        ),
        NODES: StateSink(state.on_node, state.on_node_deleted, state.forget_nodes_except),
        PODS: StateSink(state.on_pod, state.on_pod_deleted, state.forget_pods_except),
    }


class Ingest:
    """The four readers, and the moment they have all listed once (``state.synced``)."""

    def __init__(
        self,
        state: ControllerState,
        api: client.ApiClient,
        server_timeout: float = 25.0,
        client_margin: float = 5.0,
        list_from_cache: bool = True,
    ) -> None:
        """``server_timeout``: seconds the server is asked to keep a watch open (plus up to 20 %
        jitter); ``client_margin``: how much longer the client waits before it gives the watch up
        as dead. Their sum bounds how long a silently dropped connection blinds a reader.
        ``list_from_cache``: lists from the API server's watch cache first (``Reflector``)."""
        self._state = state
        self.readers = [
            Reflector(
                api,
                kind,
                sink,
                server_timeout=server_timeout,
                client_margin=client_margin,
                list_from_cache=list_from_cache,
            )
            for kind, sink in sinks(state).items()
        ]
        state.readers = {reader.kind.name: reader.health for reader in self.readers}

    async def run(self) -> None:
        first = [reader for reader in self.readers if reader.kind is not PODS]
        tasks = [asyncio.create_task(reader.run(), name=reader.kind.name) for reader in first]
        try:
            await asyncio.gather(*(reader.health.listed.wait() for reader in first))
            await rebuild_off_loop(self._state.engine)  # the trees, built before the pods arrive
            pods = [reader for reader in self.readers if reader.kind is PODS]
            tasks += [asyncio.create_task(reader.run(), name=reader.kind.name) for reader in pods]
            await asyncio.gather(*(reader.health.listed.wait() for reader in pods))
            self._state.mark_synced()
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
