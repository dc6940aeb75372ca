"""Fixtures for the request-contract tests of the Kubernetes adapters against KMock.

KMock (the ``kmock`` fixture of its pytest plugin) serves Kubernetes-shaped URLs on a local port
and records every request; its default handler emulates a stateful API server: objects in
``kmock.objects``, POST creates (409 when the object exists), PATCH merges the body into the object
(maps merge, ``null`` deletes) and GET returns it. ``api`` is a real kubernetes_asyncio ApiClient
pointed at it, so the adapters are exercised down to the HTTP requests they send.

What KMock does not emulate, and what the fixtures here add or the tests leave out:

* no ``resourceVersion``: ``leases`` serves ``PUT`` (KMock has no action for it) and implements
  the optimistic-concurrency check of a replace (409 when the sent version is not the stored one);
* no admission or schema validation: 422 and other refusals are injected as canned responses;
* no retry-after or rate limiting: 429 is a canned response too;
* creation answers 200 where the API server answers 201 Created (and kubernetes_asyncio then
  returns None for a custom object): ``created_is_201`` answers creations with 201 and the object,
  below the priority of any reaction a test sets up;
* a POST to ``/api/v1/namespaces`` cannot be parsed by KMock (it reads "namespaces" as the start
  of a namespaced path) and is answered 500 whatever the test sets up: ``ensure_namespace`` is
  covered by tests/unit/kube/test_start_up_steps.py and the controller tests, with fakes instead;
* ``/version`` is served for 1.26 at ``/version`` only: kubernetes_asyncio asks for ``/version/``,
  which a test answers itself (test_kube_start_up.py).

``clock``, ``failures`` and ``elector`` run kube.lease.LeaderElector on a fake clock (the Lease
election tests; the clock and the helpers they share are in ``lease_election``).

``retry_delays`` makes the backoff of ``kube.errors.with_retries`` instantaneous and records the
delays it asked for, so retry tests run fast and can check the backoff itself.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import kmock
import pytest
from kubernetes_asyncio import client
from lease_election import LEASES, ME, NAME, NS, Clock

from elasticquota.kube import errors
from elasticquota.kube import fence as fence_module
from elasticquota.kube import lease as lease_module
from elasticquota.kube.client import ObservedApiClient
from elasticquota.kube.lease import LeaderElector


@dataclass(frozen=True)
class SilentServer:
    """A local server that accepts connections and never answers (an API server gone silent)."""

    configuration: client.Configuration
    connections: list[asyncio.StreamWriter]


@pytest.fixture
async def silent_server() -> AsyncIterator[SilentServer]:
    """A ``SilentServer`` for the test; its connections are closed at the end."""
    answer = asyncio.Event()
    connections: list[asyncio.StreamWriter] = []

    async def never_answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        await answer.wait()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield SilentServer(client.Configuration(host=f"http://127.0.0.1:{port}"), connections)
    finally:
        answer.set()
        for writer in connections:
            writer.close()
            await writer.wait_closed()
        server.close()
        await server.wait_closed()


def status(code: int, reason: str) -> dict[str, Any]:
    """A Kubernetes ``Status`` body, as the API server sends with an error."""
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": f"injected {code}",
        "reason": reason,
        "code": code,
    }


@pytest.fixture
def k8s_status() -> Callable[[int, str], dict[str, Any]]:
    """``k8s_status(code, reason)``: the Status body of an error (test modules cannot import
    from here: several ``conftest`` modules exist)."""
    return status


@pytest.fixture(autouse=True)
def retry_delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backoff delays ``with_retries`` slept (instantly), in order."""
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)
        await asyncio.sleep(0)

    fake = SimpleNamespace(
        sleep=sleep, wait_for=asyncio.wait_for, TimeoutError=asyncio.TimeoutError
    )
    monkeypatch.setattr(errors, "asyncio", fake)
    return delays


@pytest.fixture(autouse=True)
def created_is_201(kmock: kmock.KubernetesEmulator) -> None:
    """Creations answer 201 Created with the object, as the API server does."""
    (kmock**-1)["post"] << 201 << (lambda request: request.data)


@pytest.fixture
async def api(kmock: kmock.KubernetesEmulator) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio client talking to the KMock server."""
    configuration = client.Configuration(host=str(kmock.url))
    async with client.ApiClient(configuration=configuration) as api_client:
        yield api_client


@pytest.fixture
def seen() -> list[tuple[str, str]]:
    """The failed requests the ``observed`` client reported, as ``(verb, code)``."""
    return []


@pytest.fixture
def request_timeout() -> float | None:
    """The bound of each request of the ``observed`` client (none here; a module may set one)."""
    return None


@pytest.fixture
async def observed(
    kmock: kmock.KubernetesEmulator, seen: list[tuple[str, str]], request_timeout: float | None
) -> AsyncIterator[client.ApiClient]:
    """The operator's client (``ObservedApiClient``) talking to the KMock server, reporting its
    failed requests to ``seen``."""
    configuration = client.Configuration(host=str(kmock.url))
    async with ObservedApiClient(
        configuration, lambda *failure: seen.append(failure), request_timeout
    ) as api_client:
        yield api_client


class Leases:
    """Lease objects in KMock, with ``PUT`` served as a replace guarded by ``resourceVersion``."""

    def __init__(self, server: kmock.KubernetesEmulator) -> None:
        self._server = server
        server["put", kmock.resource(LEASES)] << self._replace

    def _replace(self, request: kmock.Request) -> dict[str, Any]:
        key = (LEASES, request.namespace, request.name)
        if not self.exists(str(request.namespace), str(request.name)):
            raise kmock.KubernetesObjectNotFoundError()
        stored = self._server.objects[key].raw
        version = stored["metadata"].get("resourceVersion")
        if request.data["metadata"].get("resourceVersion") != version:
            raise kmock.KubernetesError(409, "Conflict", "the object has been modified")
        replaced = copy.deepcopy(request.data)
        replaced["metadata"]["resourceVersion"] = str(int(version or "0") + 1)
        self._server.objects[key] = replaced
        return replaced

    def put(self, namespace: str, name: str, version: str = "1", **spec: Any) -> None:
        """Store a Lease as another replica (or a previous run) left it."""
        self._server.objects[LEASES, namespace, name] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": version},
            "spec": spec,
        }

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        raw: dict[str, Any] = self._server.objects[LEASES, namespace, name].raw
        return raw

    def exists(self, namespace: str, name: str) -> bool:
        try:
            return not self._server.objects[LEASES, namespace, name].deleted
        except KeyError:
            return False


@pytest.fixture
def leases(kmock: kmock.KubernetesEmulator) -> Leases:
    return Leases(kmock)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The fake ``Clock`` of the leader election's loop and of its fence (see lease_election)."""
    fake = Clock()
    for module in (lease_module, fence_module):
        monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=fake.monotonic))
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
    """This replica's ``LeaderElector`` (15 s Leases) on ``clock``, reporting to ``failures``."""
    return LeaderElector(api, NS, NAME, ME, duration=15.0, on_renew_failure=failures.append)
