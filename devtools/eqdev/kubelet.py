"""SIMULATION for the local demo only: the requests a scheduler and a kubelet make for a pod.

The node simulator (``eqdev.simulator``) binds pods, reports them Running and removes stopped
ones through ``SimulatedNodes``; ``KubeNodes`` sends those requests to the API server on the
operator's writers' client (fenced by the Lease, bounded in time), the tests' fake cluster records
them. None of this is in the operator's ``Cluster`` port: a real cluster has its own scheduler and
kubelets, and the operator never binds, starts or removes a pod.
"""

from __future__ import annotations

import datetime
from typing import Protocol

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.errors import raise_for_status, with_retries
from elasticquota.kube.quotas import MERGE_PATCH


class SimulatedNodes(Protocol):
    """What the node simulator does to pods, and the Events it posts about them."""

    async def post_event(
        self, involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        """Post an Event about ``involved``."""

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        """Bind a pod to a node, as a scheduler does."""

    async def mark_running(self, namespace: str, name: str) -> None:
        """Report a pod Running and Ready, as a kubelet does."""

    async def remove_stopped_pod(self, namespace: str, name: str) -> None:
        """Remove a deleted pod whose containers stopped, as a kubelet does."""


class KubeNodes:
    """The simulator's requests, sent on the client of the operator's ``KubeCluster``."""

    def __init__(self, cluster: KubeCluster) -> None:
        self._cluster = cluster

    async def post_event(
        self, involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
    ) -> None:
        await self._cluster.post_event(involved, reason, message, event_type)

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        await bind_pod(self._cluster.api, namespace, name, node)

    async def mark_running(self, namespace: str, name: str) -> None:
        await mark_running(self._cluster.api, namespace, name)

    async def remove_stopped_pod(self, namespace: str, name: str) -> None:
        await remove_stopped_pod(self._cluster.api, namespace, name)


async def bind_pod(api: client.ApiClient, namespace: str, name: str, node: str) -> None:
    """What a scheduler does: a Binding of the pod to ``node``."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }

    async def bind() -> None:
        # The reply (a Status) is read raw, as the generated client cannot read it as a Binding;
        # unpreloaded, its status is not checked by the client: a refusal would pass for success.
        response = await client.CoreV1Api(api).create_namespaced_pod_binding(
            name, namespace, body, _preload_content=False
        )
        await raise_for_status(response)

    await with_retries(bind, f"bind Pod {namespace}/{name} to {node}", attempts=3)


async def mark_running(api: client.ApiClient, namespace: str, name: str) -> None:
    """What a kubelet reports once the containers run: phase Running, a start time, Ready."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "phase": "Running",
        "startTime": now,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }
    await with_retries(
        lambda: client.CoreV1Api(api).patch_namespaced_pod_status(
            name, namespace, {"status": status}, _content_type=MERGE_PATCH
        ),
        f"mark Pod {namespace}/{name} Running",
        attempts=3,
    )


async def remove_stopped_pod(api: client.ApiClient, namespace: str, name: str) -> None:
    """What a kubelet does once a deleted pod's containers have stopped: remove it for good
    (grace period 0). A pod already gone is fine."""

    async def delete() -> None:
        try:
            await client.CoreV1Api(api).delete_namespaced_pod(
                name, namespace, grace_period_seconds=0
            )
        except ApiException as error:
            if error.status != 404:
                raise

    await with_retries(delete, f"remove stopped Pod {namespace}/{name}", attempts=3)
