"""Fixtures for the controller tests: raw bodies, an in-memory cluster, memory, settings.

The controller writes through the ``Cluster`` port it is given at construction; the ``cluster``
fixture is the in-memory one of ``fake_cluster`` (merge patches, recorded calls, failures on
demand). No test here opens a network connection.

Test modules use the fixtures only (several ``conftest`` modules exist, so importing from here
would be ambiguous); the helper types are imported under ``TYPE_CHECKING`` at most.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, cast

import kopf
import pytest
from cluster_quotas import add_quota
from fake_cluster import FakeCluster
from kubernetes_asyncio import client
from profile_bodies import profile_body
from quota_bodies import quota_body

from elasticquota.api import Body
from elasticquota.controller.context import LoopContext
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import Admission, register_webhooks
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.settings import Settings


class Bodies:
    """Raw Kubernetes objects as the watch delivers them (quantities as strings)."""

    quota = staticmethod(quota_body)

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

    profile = staticmethod(profile_body)


class WorkerThreads(ThreadPoolExecutor):
    """The event loop's default executor (``asyncio.to_thread``), recording what ran in it: the
    function's name and the thread, in order. ``hold(name)`` makes the next runs of that function
    wait until ``release()`` (``started`` is set once one waits); ``break_next(name)`` makes the
    next run of that function raise (a bug)."""

    def __init__(self) -> None:
        super().__init__(max_workers=4, thread_name_prefix="test-worker")
        self.ran: list[tuple[str, int]] = []
        self.started = threading.Event()
        self._held: dict[str, threading.Event] = {}
        self._to_break: set[str] = set()

    def names(self, name: str) -> int:
        """How many times ``name`` ran here."""
        return sum(1 for ran, _ in self.ran if ran == name)

    def threads(self) -> set[int]:
        return {thread for _, thread in self.ran}

    def hold(self, name: str) -> None:
        self._held[name] = threading.Event()

    def break_next(self, name: str) -> None:
        self._to_break.add(name)

    def release(self) -> None:
        for event in self._held.values():
            event.set()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        # asyncio.to_thread submits functools.partial(context.run, function, *arguments)
        target = fn.args[0] if isinstance(fn, functools.partial) and fn.args else fn
        name = getattr(target, "__name__", repr(target))

        def run() -> Any:
            self.ran.append((name, threading.get_ident()))
            if name in self._to_break:
                self._to_break.discard(name)
                raise RuntimeError(f"{name}: a bug")
            held = self._held.get(name)
            if held is not None:
                self.started.set()
                held.wait(timeout=10)
            return fn(*args, **kwargs)

        return super().submit(run)


@pytest.fixture
def k8s() -> Bodies:
    """Builders of raw bodies: ``k8s.quota(...)``, ``k8s.pod(...)``, ``k8s.node(...)``, ..."""
    return Bodies()


@pytest.fixture
def api() -> client.ApiClient:
    """A stand-in ApiClient for the readers (``Ingest``), which these tests never start."""
    return cast(client.ApiClient, object())


@pytest.fixture
def cluster() -> FakeCluster:
    """An in-memory cluster (the ``Cluster`` port) that records every call."""
    return FakeCluster()


@pytest.fixture
async def worker() -> WorkerThreads:
    """What the loops run off the event loop, recorded (``WorkerThreads``)."""
    executor = WorkerThreads()
    asyncio.get_running_loop().set_default_executor(executor)
    return executor


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


@pytest.fixture(params=["the initial listing", "the Lease"])
def listed(request: pytest.FixtureRequest, leading: asyncio.Event) -> bool:
    """What a writing loop waits for: the initial listing (False: not in memory yet), or the
    Lease (True: listed, but this replica is a standby: ``leading`` is cleared)."""
    if request.param == "the Lease":
        leading.clear()
        return True
    return False


@pytest.fixture
def metrics(state: ControllerState, leading: asyncio.Event) -> Metrics:
    """The operator's metrics on a fresh registry, reading ``state`` at scrape time."""
    metrics = Metrics()
    metrics.watch(state, leading)
    return metrics


@pytest.fixture
def context(
    state: ControllerState,
    cluster: FakeCluster,
    leading: asyncio.Event,
    metrics: Metrics,
    make_settings: Callable[..., Settings],
) -> LoopContext:
    """What a writing loop is given: ``state``, the in-memory cluster, the test settings, the
    Lease held and the metrics (``dataclasses.replace`` it for other settings)."""
    return LoopContext(state, cluster, make_settings(), leading, metrics)


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


@pytest.fixture
def world(state: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """A node, quotas ``a`` and ``b`` (objects never written) and a running pod in ``a``: the
    reconciling tests' world (a module that needs another one defines its own ``world``)."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi"}))
    add_quota(state, cluster, k8s.quota("a", min={"cpu": "2"}, max={"cpu": "4"}))
    add_quota(state, cluster, k8s.quota("b", min={"cpu": "2"}, max={"cpu": "4"}))
    state.on_pod(k8s.pod("p1", quota="a", requests={"cpu": "1"}, node="n1", phase="Running"))
    return state


@pytest.fixture
def webhook_settings(make_settings: Callable[..., Settings]) -> Settings:
    """The test settings with the admission webhooks on (a webhook port set)."""
    return make_settings(webhook_port=9443)


@pytest.fixture
def synced(state: ControllerState) -> ControllerState:
    """``state`` once the initial listing is in memory."""
    state.mark_synced()
    return state


@pytest.fixture
def admission(synced: ControllerState, webhook_settings: Settings) -> Admission:
    """The admission webhooks' handlers over the synced memory, called directly (no Kopf)."""
    return register_webhooks(kopf.OperatorRegistry(), synced, webhook_settings)
