"""An in-memory ``Cluster`` (``elasticquota.controller.cluster``) for the controller tests, and
the node simulator's ``SimulatedNodes`` (``eqdev.kubelet``: bind, start, remove pods).

It behaves like the API server where the controller depends on it: writes are JSON merge patches
(RFC 7386: maps merge, ``null`` deletes) and answer the server's object, creating an existing
object answers None (the adapter's reading of a 409), patching a missing one raises a 404. It
records every call, with the event loop's time, and can be told to fail the next calls of a verb,
how the next evictions end, or to refuse every call about an object. An eviction or a gate release
given a pod's creation time checks it against the pod stored under the name (``store``), as the
adapter's checks do: another creation time there is GONE, or not released (False), and a waiting
condition so given is not written (None); otherwise an eviction or a waiting condition so given
answers the stored pod's uid, as the adapter's read does, and so does an eviction told to fail
(``EvictionError``, as the adapter raises a request that failed after the read; a
``NotLeadingError`` as it is); the creation times given are kept in ``created``. No call opens a
network connection.
"""

from __future__ import annotations

import asyncio
import copy
from collections import defaultdict
from typing import Any

from json_merge_patch import merge_patch
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.api import Body
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult, failing_as_eviction
from elasticquota.kube.quotafigures import Changes, figures_patch


class FakeCluster:
    """The API server as far as the controller writes to it, in memory."""

    def __init__(self) -> None:
        self.quotas: dict[tuple[str, str], Body] = {}
        self.profiles: dict[tuple[str, str], Body] = {}
        self.pods: dict[tuple[str, str], Body] = {}
        self.namespaces: set[str] = set()
        self.events: list[Body] = []
        #: Every call: (verb, namespace, name, body) in call order, and the loop's time of each.
        self.calls: list[tuple[str, str, str, Any]] = []
        self.called_at: list[float] = []
        self.failures: dict[str, list[BaseException]] = defaultdict(list)
        #: Objects (by name) every call about which fails with a server error.
        self.refused: set[str] = set()
        #: How the next evictions end (EVICTED once these are used up).
        self.outcomes: list[EvictionOutcome] = []
        #: The pods the evictions, gate releases and conditions were about: (verb, namespace,
        #: name, created).
        self.created: list[tuple[str, str, str, str]] = []
        #: Seconds each call takes (to observe concurrency and pacing).
        self.latency = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        #: Quotas and profiles as each write left them, not yet taken by ``watch``.
        self._echoes: list[Body] = []

    # -- test helpers ---------------------------------------------------------------------------

    def store(self, body: Body) -> Body:
        """Put an object in the cluster as it is (and return it)."""
        meta = body["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        store = {"ElasticQuota": self.quotas, "ElasticQuotaProfile": self.profiles}
        store.get(body.get("kind", ""), self.pods)[key] = copy.deepcopy(body)
        return body

    def fail(self, verb: str, *errors: BaseException) -> None:
        """The next calls of ``verb`` raise these errors, in order."""
        self.failures[verb].extend(errors)

    def evictions_end(self, *outcomes: EvictionOutcome) -> None:
        """The next evictions end so, in order."""
        self.outcomes.extend(outcomes)

    def verbs(self) -> list[str]:
        return [verb for verb, *_ in self.calls]

    def named(self, verb: str) -> list[str]:
        """The names the calls of ``verb`` were about, in order."""
        return [name for called, _, name, _ in self.calls if called == verb]

    def watch(self) -> list[Body]:
        """The objects the writes since the last call changed, as a watch would bring them (one
        per write, in order): the tests hand them to the state's readers' entry points."""
        echoes, self._echoes = self._echoes, []
        return echoes

    def writes(self) -> list[tuple[str, str, str, Any]]:
        """Calls that change something (everything but namespace creation)."""
        return [call for call in self.calls if call[0] != "ensure_namespace"]

    # -- the port -------------------------------------------------------------------------------

    async def _call(self, verb: str, namespace: str, name: str, body: Any) -> None:
        self.calls.append((verb, namespace, name, copy.deepcopy(body)))
        self.called_at.append(asyncio.get_running_loop().time())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
        finally:
            self.in_flight -= 1
        if self.failures[verb]:
            raise self.failures[verb].pop(0)
        if name in self.refused:
            raise ApiException(status=500, reason=f"refused: {name}")

    def _patched(
        self, store: dict[tuple[str, str], Body], key: tuple[str, str], patch: Body
    ) -> Body:
        if key not in store:
            raise ApiException(status=404, reason="Not Found")
        store[key] = merge_patch(store[key], patch)
        self._echoes.append(copy.deepcopy(store[key]))
        return copy.deepcopy(store[key])

    async def patch_quota(self, namespace: str, name: str, patch: Body) -> Body | None:
        await self._call("patch_quota", namespace, name, patch)
        return self._patched(self.quotas, (namespace, name), patch)

    async def write_quota(
        self, namespace: str, name: str, annotations: Changes, used: Changes | None
    ) -> Body | None:
        """The figures as one merge patch of the object (a CRD without a status subresource)."""
        patch = figures_patch(annotations, used)
        await self._call("write_quota", namespace, name, patch)
        return self._patched(self.quotas, (namespace, name), patch)

    async def create_quota(self, body: Body) -> Body | None:
        meta = body["metadata"]
        await self._call("create_quota", meta["namespace"], meta["name"], body)
        key = (meta["namespace"], meta["name"])
        if key in self.quotas:
            return None
        created = copy.deepcopy(body)
        created["metadata"]["uid"] = f"uid-{key[0]}-{key[1]}"
        self.quotas[key] = created
        self._echoes.append(copy.deepcopy(created))
        return copy.deepcopy(created)

    async def patch_profile(self, namespace: str, name: str, patch: Body) -> Body | None:
        await self._call("patch_profile", namespace, name, patch)
        return self._patched(self.profiles, (namespace, name), patch)

    async def ensure_namespace(self, name: str) -> None:
        await self._call("ensure_namespace", "", name, None)
        self.namespaces.add(name)

    async def post_event(
        self, involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        event = {"involvedObject": involved, "reason": reason, "message": message}
        await self._call("post_event", involved.get("namespace", ""), involved["name"], event)
        self.events.append({**event, "type": event_type})

    def _another_pod(self, verb: str, namespace: str, name: str, created: str) -> bool:
        """Whether the pod stored under the name is not the one created at ``created`` (none
        given, or none stored: nothing to compare)."""
        self.created.append((verb, namespace, name, created))
        stored = self.pods.get((namespace, name), {}).get("metadata", {}).get("creationTimestamp")
        return bool(created) and stored is not None and stored != created

    def _uid_read(self, namespace: str, name: str, created: str) -> str:
        """The uid of the stored pod, as the adapter reads it given the creation time (none
        given: not read, ``""``)."""
        stored = self.pods.get((namespace, name), {}).get("metadata", {})
        return str(stored.get("uid", "")) if created else ""

    async def evict(self, namespace: str, name: str, created: str = "") -> EvictionResult:
        """As the adapter: the pod read first, then the request, whose failure names its uid."""
        another = self._another_pod("evict", namespace, name, created)
        uid = "" if another else self._uid_read(namespace, name, created)
        with failing_as_eviction(uid):
            await self._call("evict", namespace, name, None)
        if another:
            return EvictionResult(EvictionOutcome.GONE)  # another pod has the name
        outcome = self.outcomes.pop(0) if self.outcomes else EvictionOutcome.EVICTED
        if outcome is EvictionOutcome.EVICTED:
            self.pods.pop((namespace, name), None)
        return EvictionResult(outcome, uid)

    async def set_scheduling_gates(
        self, namespace: str, name: str, gates: list[str], created: str = ""
    ) -> bool:
        await self._call("set_scheduling_gates", namespace, name, gates)
        return not self._another_pod("set_scheduling_gates", namespace, name, created)

    async def set_waiting_condition(
        self, namespace: str, name: str, waiting: bool, message: str, created: str = ""
    ) -> str | None:
        body = {"waiting": waiting, "message": message}
        await self._call("set_waiting_condition", namespace, name, body)
        if self._another_pod("set_waiting_condition", namespace, name, created):
            return None
        return self._uid_read(namespace, name, created)

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        await self._call("bind_pod", namespace, name, node)
        self.pods[(namespace, name)] = merge_patch(
            self.pods.get((namespace, name), {}), {"spec": {"nodeName": node}}
        )

    async def mark_running(self, namespace: str, name: str) -> None:
        await self._call("mark_running", namespace, name, None)
        self.pods[(namespace, name)] = merge_patch(
            self.pods.get((namespace, name), {}), {"status": {"phase": "Running"}}
        )

    async def remove_stopped_pod(self, namespace: str, name: str) -> None:
        await self._call("remove_stopped_pod", namespace, name, None)
        self.pods.pop((namespace, name), None)
