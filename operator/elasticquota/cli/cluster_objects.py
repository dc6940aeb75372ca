"""Every object `plan` reads, fetched from a live cluster (for `explain`, `usage` and the tests).

``read_cluster`` reads them through ``cluster.read``: bounded in time, and whatever stops it (no
kubeconfig, a refused connection, a status error, the deadline) is one ``ClusterReadError`` whose
message is a single line for the command's stderr, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.cli.cluster import ClusterTarget, read
from elasticquota.kube.quotas import PROFILE_GROUP, PROFILE_PLURAL, PROFILE_VERSION, list_quotas
from elasticquota.plan.loader import Manifests


async def _raw_items(call: Callable[..., Any]) -> list[dict[str, Any]]:
    """A list call's items as plain dicts (the generated models are not what ``plan`` parses);
    an error status is an ``ApiException`` as a preloaded call's (a raw read is not checked)."""
    response = await call(_preload_content=False)
    if not 200 <= response.status <= 299:
        raise ApiException(status=response.status, reason=response.reason)
    items: list[dict[str, Any]] = json.loads(await response.read())["items"]
    return items


async def cluster_manifests(api: client.ApiClient) -> Manifests:
    """Quotas, profiles, pods, nodes and priority classes as the cluster holds them now."""
    core = client.CoreV1Api(api)
    objects = client.CustomObjectsApi(api)
    manifests = Manifests()
    manifests.quotas = [{"kind": "ElasticQuota", **quota} for quota in await list_quotas(api)]
    profiles = await objects.list_cluster_custom_object(
        PROFILE_GROUP, PROFILE_VERSION, PROFILE_PLURAL
    )
    manifests.profiles = [{"kind": "ElasticQuotaProfile", **item} for item in profiles["items"]]
    manifests.pods = [
        {"apiVersion": "v1", "kind": "Pod", **pod}
        for pod in await _raw_items(core.list_pod_for_all_namespaces)
    ]
    manifests.nodes = [
        {"apiVersion": "v1", "kind": "Node", **node} for node in await _raw_items(core.list_node)
    ]
    manifests.priority_classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", **item}
        for item in await _raw_items(client.SchedulingV1Api(api).list_priority_class)
    ]
    return manifests


async def read_cluster(target: ClusterTarget) -> Manifests:
    """``cluster_manifests`` of the target's cluster, bounded in time (``cluster.read``)."""
    return await read(target, cluster_manifests)
