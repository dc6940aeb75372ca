"""AdmissionReviews served by Kopf over HTTPS on loopback, as the API server sends them.

Shared by the controller's webhook, user-limit admission and metrics tests, and by the chart's
test of the webhooks Kopf would write.

Only public paths: Kopf runs embedded (``kopf.operator``) with the registry under test and the
operator's own Kopf settings (``runner.kopf_settings``: the operator's ``WebhookServer`` on a free
loopback port, its self-signed certificate); the registry's login handler (registries come from
``runner.make_registry``) logs in through a kubeconfig that points at an emulated API server
(KMock) whose discovery knows the served resources, since Kopf answers only for resources the
cluster has. Each review is an HTTPS POST to the webhook's path, as the API server makes it.

``serving`` must start and end in the same task, one that exists before it starts (the test's
own): when it stops, the embedded Kopf cancels the tasks created while it ran, as it would a
standalone operator's (so no async fixture may hold it across a test).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import aiohttp
import kmock
import kopf
import yaml
from ports import reserved_port

from elasticquota.controller.runner import kopf_settings
from elasticquota.settings import Settings

QUOTA_RESOURCE = kopf.Resource("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas")
POD_RESOURCE = kopf.Resource("", "v1", "pods")
#: What the emulated API server's discovery lists (Kopf serves only resources it has discovered).
DISCOVERED = {
    "scheduling.sigs.k8s.io/v1alpha1/elasticquotas": "ElasticQuota",
    "v1/pods": "Pod",
}
#: Where Kopf writes the configurations it manages (cluster-scoped), as every API server has them.
WEBHOOK_CONFIGURATIONS = {
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": (
        "ValidatingWebhookConfiguration"
    ),
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": (
        "MutatingWebhookConfiguration"
    ),
}
#: The plurals of the two configurations: validating, then mutating.
CONFIGURATIONS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
VERBS = ["get", "list", "watch", "create", "patch", "delete"]
#: Starting (discovery, the HTTPS server) and stopping take well under a second; bounded anyway.
START_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0

Review = Callable[..., Awaitable[dict[str, Any]]]


async def admission_review(
    registry: kopf.OperatorRegistry, webhook: str, resource: kopf.Resource, **request: Any
) -> dict[str, Any]:
    """Serve one AdmissionReview through Kopf, and return its ``response`` part."""
    async with serving(registry) as served:
        return await served.review(webhook, resource, **request)


@dataclass(frozen=True)
class Served:
    """``review(webhook, resource, **request)`` answers with the AdmissionReview's ``response``
    part; ``cluster`` is the emulated API server Kopf talks to (what it wrote, its requests)."""

    review: Review
    cluster: kmock.KubernetesEmulator


@contextlib.asynccontextmanager
async def serving(
    registry: kopf.OperatorRegistry,
    settings: Settings | None = None,
    discovered: Mapping[str, str] = DISCOVERED,
) -> AsyncIterator[Served]:
    """Kopf serving ``registry``'s webhooks until the block ends, tuned by ``settings`` (the
    operator's Kopf settings; by default a server on a loopback port held for it), the emulated
    API server listing ``discovered`` (``group/version/plural``: kind) as namespaced resources."""
    if settings is not None:
        async with _serving(registry, settings, discovered) as served:
            yield served
        return
    with reserved_port() as port:  # kmock's own server, bound meanwhile, cannot take it
        settings = Settings(
            webhook_port=port, webhook_address="127.0.0.1", webhook_host="127.0.0.1"
        )
        async with _serving(registry, settings, discovered) as served:
            yield served


@contextlib.asynccontextmanager
async def _serving(
    registry: kopf.OperatorRegistry, settings: Settings, discovered: Mapping[str, str]
) -> AsyncIterator[Served]:
    async with kmock.KubernetesEmulator() as cluster, kmock.Server(cluster) as server:
        for key, kind in discovered.items():
            served = {"kind": kind, "namespaced": True, "verbs": ["get"]}
            cluster.resources[key] = cast(kmock.ResourceDict, served)  # kmock fills the rest
        for key, kind in WEBHOOK_CONFIGURATIONS.items():
            configured = {"kind": kind, "namespaced": False, "verbs": VERBS}
            cluster.resources[key] = cast(kmock.ResourceDict, configured)
        with _kubeconfig(str(server.url)):
            stop, ready = asyncio.Event(), asyncio.Event()
            operator = asyncio.create_task(
                kopf.operator(
                    registry=registry,
                    settings=kopf_settings(settings),
                    clusterwide=True,
                    stop_flag=stop,
                    ready_flag=ready,
                )
            )
            try:
                await asyncio.wait_for(ready.wait(), START_TIMEOUT)
                async with aiohttp.ClientSession() as session:
                    url = f"https://127.0.0.1:{settings.webhook_port}"
                    yield Served(_reviewer(session, url), cluster)
            finally:
                stop.set()
                await asyncio.wait_for(operator, STOP_TIMEOUT)


async def managed_webhooks(
    cluster: kmock.KubernetesEmulator, name: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The webhooks of the validating and of the mutating configuration ``name``, once Kopf's
    configuration manager has written both (merge patches; it writes them as soon as it serves)."""
    paths = [f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}" for plural in CONFIGURATIONS]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT
    while True:
        patches = {
            request.url.path: request.data["webhooks"]
            for request in cluster
            if request.method == kmock.method.PATCH and request.url.path in paths
        }
        if len(patches) == len(paths):
            return patches[paths[0]], patches[paths[1]]
        assert loop.time() < deadline, f"Kopf wrote {sorted(patches)}, not {paths}"
        await asyncio.sleep(0.05)


def _reviewer(session: aiohttp.ClientSession, url: str) -> Review:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the server's self-signed certificate is not the test's

    async def review(webhook: str, resource: kopf.Resource, **request: Any) -> dict[str, Any]:
        payload = {
            "uid": str(uuid.uuid4()),
            "resource": {"group": resource.group, "version": resource.version,
                         "resource": resource.plural},
            "userInfo": {"username": "tester"},
            **request,
        }  # fmt: skip
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": payload}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT
        while True:  # ready: the server task is started; its socket may follow a moment later
            try:
                async with session.post(f"{url}/{webhook}", json=body, ssl=context) as reply:
                    assert reply.status == 200, await reply.text()
                    answer = await reply.json()
                    break
            except aiohttp.ClientConnectorError:
                if loop.time() > deadline:
                    raise
                await asyncio.sleep(0.05)
        result: dict[str, Any] = dict(answer["response"])
        assert result.pop("uid") == payload["uid"]
        return result

    return review


@contextlib.contextmanager
def _kubeconfig(server: str) -> Iterator[None]:
    """``KUBECONFIG`` names a kubeconfig for ``server`` (restored after): the registry's login
    handler (``runner.build_registry``) then logs in there, as the operator does."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kmock", "cluster": {"server": server.rstrip("/")}}],
        "users": [{"name": "tester", "user": {"token": "test"}}],
        "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "tester"}}],
        "current-context": "kmock",
    }
    before = os.environ.get("KUBECONFIG")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        os.environ["KUBECONFIG"] = str(path)
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = before
