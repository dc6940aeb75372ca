"""Fixtures for the controller tests: raw bodies, a fake cluster in place of the API, settings.

The controller modules import their Kubernetes adapters by name (``patch_quota``, ``create_quota``,
``post_event``, ...). The ``cluster`` fixture replaces every one of them with an in-memory fake that
behaves like the API server where the controller depends on it: writes are JSON merge patches (RFC
7386: maps merge, ``null`` deletes), the server's object is returned, creating an existing object
answers 409. It records every call and can be told to fail the next calls of a verb. No test here
opens a network connection.

Test modules use the fixtures only (several ``conftest`` modules exist, so importing from here
would be ambiguous); the helper types are imported under ``TYPE_CHECKING`` at most.
"""

from __future__ import annotations

import asyncio
import copy
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.engine import EngineSettings
from elasticquota.settings import Settings

Body = dict[str, Any]

#: The controller never touches the client itself: it only hands it to the (faked) adapters.
API = cast(client.ApiClient, object())


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies ``application/merge-patch+json``."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class Bodies:
    """Raw Kubernetes objects as the watch delivers them (quantities as strings)."""

    @staticmethod
    def quota(
        name: str,
        namespace: str = "team",
        *,
        min: Mapping[str, str] | None = None,
        max: Mapping[str, str] | None = None,
        parent: str | None = None,
        is_parent: bool = False,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        status: Mapping[str, Any] | None = None,
    ) -> Body:
        all_labels = dict(labels or {})
        if parent is not None:
            all_labels[keys.LABEL_PARENT] = parent
        if is_parent:
            all_labels[keys.LABEL_IS_PARENT] = "true"
        body: Body = {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "labels": all_labels,
                "annotations": dict(annotations or {}),
            },
            "spec": {"min": dict(min or {}), "max": dict(max or {})},
        }
        if status is not None:
            body["status"] = dict(status)
        return body

    @staticmethod
    def pod(
        name: str,
        namespace: str = "team",
        *,
        quota: str | None = None,
        requests: Mapping[str, str] | None = None,
        node: str = "",
        phase: str = "Pending",
        priority: int | None = None,
        created: str = "2024-01-01T00:00:00Z",
        deleted: str | None = None,
    ) -> Body:
        """``deleted``: metadata.deletionTimestamp (the end of the grace period)."""
        labels = {keys.POD_LABEL_QUOTA: quota} if quota else {}
        spec: Body = {
            "containers": [{"name": "main", "resources": {"requests": dict(requests or {})}}]
        }
        if node:
            spec["nodeName"] = node
        if priority is not None:
            spec["priority"] = priority
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "creationTimestamp": created,
                **({"deletionTimestamp": deleted} if deleted else {}),
            },
            "spec": spec,
            "status": {"phase": phase},
        }

    @staticmethod
    def node(
        name: str,
        *,
        allocatable: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        ready: bool = True,
        unschedulable: bool = False,
    ) -> Body:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"unschedulable": unschedulable},
            "status": {
                "allocatable": dict(allocatable or {"cpu": "8", "memory": "32Gi"}),
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }

    @staticmethod
    def profile(
        name: str,
        namespace: str = "team",
        *,
        quota_name: str,
        match_labels: Mapping[str, str],
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> Body:
        return {
            "apiVersion": "quota.koordinator.sh/v1alpha1",
            "kind": "ElasticQuotaProfile",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(labels or {}),
                "annotations": dict(annotations or {}),
            },
            "spec": {"quotaName": quota_name, "nodeSelector": {"matchLabels": dict(match_labels)}},
        }


class FakeCluster:
    """The API server as far as the controller sees it, in memory."""

    def __init__(self) -> None:
        self.quotas: dict[tuple[str, str], Body] = {}
        self.profiles: dict[tuple[str, str], Body] = {}
        self.pods: dict[tuple[str, str], Body] = {}
        self.namespaces: set[str] = set()
        self.events: list[Body] = []
        #: Every adapter call: (verb, namespace, name, body) in call order.
        self.calls: list[tuple[str, str, str, Any]] = []
        self.failures: dict[str, list[BaseException]] = defaultdict(list)
        #: Seconds each call takes (to observe concurrency and pacing).
        self.latency = 0.0
        self.in_flight = 0
        self.max_in_flight = 0

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

    def verbs(self) -> list[str]:
        return [verb for verb, *_ in self.calls]

    def writes(self) -> list[tuple[str, str, str, Any]]:
        """Calls that change something (everything but namespace creation)."""
        return [call for call in self.calls if call[0] != "ensure_namespace"]

    # -- the adapters ---------------------------------------------------------------------------

    async def _call(self, verb: str, namespace: str, name: str, body: Any) -> None:
        self.calls.append((verb, namespace, name, copy.deepcopy(body)))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
        finally:
            self.in_flight -= 1
        if self.failures[verb]:
            raise self.failures[verb].pop(0)

    @staticmethod
    def _patched(store: dict[tuple[str, str], Body], key: tuple[str, str], patch: Body) -> Body:
        if key not in store:
            raise ApiException(status=404, reason="Not Found")
        store[key] = merge_patch(store[key], patch)
        return copy.deepcopy(store[key])

    async def patch_quota(self, api: Any, namespace: str, name: str, patch: Body) -> Body:
        await self._call("patch_quota", namespace, name, patch)
        return self._patched(self.quotas, (namespace, name), patch)

    async def patch_quota_status(self, api: Any, namespace: str, name: str, status: Body) -> Body:
        await self._call("patch_quota_status", namespace, name, status)
        return self._patched(self.quotas, (namespace, name), {"status": status})

    async def create_quota(self, api: Any, body: Body) -> Body | None:
        meta = body["metadata"]
        await self._call("create_quota", meta["namespace"], meta["name"], body)
        key = (meta["namespace"], meta["name"])
        if key in self.quotas:
            return None
        created = copy.deepcopy(body)
        created["metadata"]["uid"] = f"uid-{key[0]}-{key[1]}"
        self.quotas[key] = created
        return copy.deepcopy(created)

    async def patch_profile(self, api: Any, namespace: str, name: str, patch: Body) -> Body:
        await self._call("patch_profile", namespace, name, patch)
        return self._patched(self.profiles, (namespace, name), patch)

    async def ensure_namespace(self, api: Any, name: str) -> None:
        await self._call("ensure_namespace", "", name, None)
        self.namespaces.add(name)

    async def post_event(
        self,
        api: Any,
        involved: dict[str, str],
        reason: str,
        message: str,
        event_type: str = "Warning",
    ) -> None:
        event = {"involvedObject": involved, "reason": reason, "message": message}
        await self._call("post_event", involved.get("namespace", ""), involved["name"], event)
        self.events.append({**event, "type": event_type})

    async def bind_pod(self, api: Any, namespace: str, name: str, node: str) -> None:
        await self._call("bind_pod", namespace, name, node)
        self.pods[(namespace, name)] = merge_patch(
            self.pods.get((namespace, name), {}), {"spec": {"nodeName": node}}
        )

    async def mark_running(self, api: Any, namespace: str, name: str) -> None:
        await self._call("mark_running", namespace, name, None)
        self.pods[(namespace, name)] = merge_patch(
            self.pods.get((namespace, name), {}), {"status": {"phase": "Running"}}
        )

    async def remove_stopped_pod(self, api: Any, namespace: str, name: str) -> None:
        await self._call("remove_stopped_pod", namespace, name, None)
        self.pods.pop((namespace, name), None)


_ADAPTERS = {
    "elasticquota.controller.reconcile": ("patch_quota", "patch_quota_status"),
    "elasticquota.controller.profiles": (
        "create_quota",
        "patch_profile",
        "patch_quota",
        "post_event",
    ),
    "elasticquota.controller.reserved": ("create_quota", "ensure_namespace"),
    "elasticquota.controller.names": ("patch_quota",),
    "elasticquota.controller.problems": ("post_event",),
    "eqdev.simulator": (
        "bind_pod",
        "mark_running",
        "post_event",
        "remove_stopped_pod",
    ),
}


def pytest_configure(config: pytest.Config) -> None:
    """No implicit event loop: mark the main thread's loop as explicitly unset.

    looptime's ``pytest_pyfunc_call`` asks the policy for the current loop even around sync tests;
    before any async test ran, Python 3.11 then creates a loop that nothing closes, and its
    ResourceWarning fails the run (``filterwarnings = error``) once an async test follows a sync
    one. With the loop explicitly unset the policy raises instead, which looptime handles.
    """
    asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the test alone, never from the ELASTIC_QUOTA_* of the machine."""
    for name in list(os.environ):
        if name.upper().startswith("ELASTIC_QUOTA_"):
            monkeypatch.delenv(name)


@pytest.fixture
def k8s() -> Bodies:
    """Builders of raw bodies: ``k8s.quota(...)``, ``k8s.pod(...)``, ``k8s.node(...)``, ..."""
    return Bodies()


@pytest.fixture
def api() -> client.ApiClient:
    """A stand-in ApiClient: the faked adapters never use it."""
    return API


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    """An in-memory cluster wired in place of every adapter the controller modules call."""
    fake = FakeCluster()
    for module, names in _ADAPTERS.items():
        for name in names:
            monkeypatch.setattr(f"{module}.{name}", getattr(fake, name))
    yield fake


@pytest.fixture
def state() -> ControllerState:
    """An empty controller memory with the default engine settings."""
    return ControllerState.create(EngineSettings())


@pytest.fixture
def leading() -> asyncio.Event:
    """The Lease held: this replica is the active one."""
    event = asyncio.Event()
    event.set()
    return event


@pytest.fixture
def metrics(state: ControllerState, leading: asyncio.Event) -> Metrics:
    """The operator's metrics on a fresh registry, reading ``state`` at scrape time."""
    metrics = Metrics()
    metrics.watch(state, leading)
    return metrics


@pytest.fixture
def make_settings() -> Callable[..., Settings]:
    """``make_settings(**overrides)``: operator settings for tests (fixed identity, 1 s pacing)."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "identity": "test-replica",
            "reconcile_interval": 1.0,
            "profile_debounce": 1.0,
            "metrics_port": 0,
        }
        values.update(overrides)
        return Settings(**values)

    return make
