"""Pod writes: admission gates and conditions, and (for the demo's node simulation) binding and
the status a kubelet sets. Evictions are in ``kube.evictions``.
"""

from __future__ import annotations

import datetime

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

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


STRATEGIC_MERGE = "application/strategic-merge-patch+json"
WAITING_CONDITION = "ElasticQuotaAdmission"


async def set_scheduling_gates(
    api: client.ApiClient, namespace: str, name: str, gates: list[str]
) -> None:
    """Replace the pod's scheduling gates (the API only lets gates be removed)."""
    body = {"spec": {"schedulingGates": [{"name": gate} for gate in gates]}}
    await with_retries(
        lambda: client.CoreV1Api(api).patch_namespaced_pod(
            name, namespace, body, _content_type=MERGE_PATCH
        ),
        f"release Pod {namespace}/{name}",
        attempts=3,
    )


async def set_waiting_condition(
    api: client.ApiClient, namespace: str, name: str, waiting: bool, message: str
) -> None:
    """The pod condition that says whether (and why) it waits for its quota."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": WAITING_CONDITION,
        "status": "False" if waiting else "True",
        "reason": "QuotaExceeded" if waiting else "Admitted",
        "message": message[:1024],
        "lastTransitionTime": now,
    }
    await with_retries(
        lambda: client.CoreV1Api(api).patch_namespaced_pod_status(
            name, namespace, {"status": {"conditions": [condition]}}, _content_type=STRATEGIC_MERGE
        ),
        f"set the admission condition of Pod {namespace}/{name}",
        attempts=3,
    )


def gates_supported(major: str, minor: str) -> bool:
    """Kubernetes 1.27+ keeps ``spec.schedulingGates`` (minor versions may read like ``27+``)."""

    def number(text: str) -> int:
        digits = "".join(ch for ch in text if ch.isdigit())
        return int(digits) if digits else 0

    return (number(major), number(minor)) >= (1, 27)


async def supports_scheduling_gates(api: client.ApiClient) -> tuple[bool, str]:
    """Whether the API server keeps pod scheduling gates, and its version."""
    version = await client.VersionApi(api).get_code()
    return gates_supported(version.major, version.minor), str(version.git_version)
