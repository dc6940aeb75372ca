"""Pod writes used by the node simulation of the local demo: binding, and the status a kubelet sets.

(Evictions come with the revocation milestone.)
"""

from __future__ import annotations

import datetime

from kubernetes_asyncio import client

from elasticquota.kube.errors import raise_for_status, with_retries
from elasticquota.kube.quotas import MERGE_PATCH


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
