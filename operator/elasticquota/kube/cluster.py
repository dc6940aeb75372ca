"""The Kubernetes adapter of the controller's ``Cluster`` port (``controller.cluster``).

Each write goes through the module that knows its request (``kube.quotas``, ``kube.events``,
``kube.evictions``, ``kube.pods``) on the client it is given: the writers' client, fenced by the
Lease and bounded in time (``kube.client``), so no write leaves a replica that is not leading.
The quota writer's figures go through ``kube.quotafigures`` (one merge patch of the object, or the
annotations and then the status subresource where the CRD has one), with their retries
(``kube.errors.with_retries``), from the requests ``kube.quotas`` builds.
One ``Evictor`` per adapter remembers which Eviction version the API server speaks.
"""

from __future__ import annotations

from kubernetes_asyncio import client

from elasticquota.api import Body
from elasticquota.kube import events, pods, quotas
from elasticquota.kube.errors import with_retries
from elasticquota.kube.evictions import EvictionResult, Evictor
from elasticquota.kube.quotafigures import Changes, QuotaFigures


class KubeCluster:
    """The API server, through one (fenced) API client."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self._evictor = Evictor(api)
        #: How quotas' figures reach the API server (the route its CRD takes, as learned so far).
        self.quota_figures = QuotaFigures(api)

    async def patch_quota(self, namespace: str, name: str, patch: Body) -> Body | None:
        return await with_retries(*quotas.quota_patch(self.api, namespace, name, patch))

    async def write_quota(
        self, namespace: str, name: str, annotations: Changes, used: Changes | None
    ) -> Body | None:
        first, through_status = self.quota_figures.first(namespace, name, annotations, used)
        body = {} if first is None else await with_retries(*first)
        return await self.quota_figures.finish(body, namespace, name, used, through_status)

    async def create_quota(self, body: Body) -> Body | None:
        return await quotas.create_quota(self.api, body)

    async def patch_profile(self, namespace: str, name: str, patch: Body) -> Body | None:
        return await quotas.patch_profile(self.api, namespace, name, patch)

    async def ensure_namespace(self, name: str) -> None:
        await quotas.ensure_namespace(self.api, name)

    async def post_event(
        self, involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        await events.post_event(self.api, involved, reason, message, event_type)

    async def evict(self, namespace: str, name: str, created: str = "") -> EvictionResult:
        return await self._evictor.evict(namespace, name, created)

    async def set_scheduling_gates(
        self, namespace: str, name: str, gates: list[str], created: str = ""
    ) -> bool:
        return await pods.set_scheduling_gates(self.api, namespace, name, gates, created)

    async def set_waiting_condition(
        self, namespace: str, name: str, waiting: bool, message: str, created: str = ""
    ) -> str | None:
        return await pods.set_waiting_condition(
            self.api, namespace, name, waiting, message, created
        )
