"""Every object `plan` reads, fetched from a live cluster (for `explain`, `usage` and the tests).

``read_cluster`` bounds the whole read in time and turns whatever stops it (no kubeconfig, a
refused connection, a status error, the deadline) into one ``ClusterReadError`` whose message is a
single line for the command's stderr, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import ConfigException

from elasticquota.cli.errors import ClusterReadError
from elasticquota.kube.quotas import PROFILE_GROUP, PROFILE_PLURAL, PROFILE_VERSION, list_quotas
from elasticquota.plan.loader import Manifests


async def _raw_items(call: Callable[..., Any]) -> list[dict[str, Any]]:
    """A list call's items as plain dicts (the generated models are not what ``plan`` parses)."""
    response = await call(_preload_content=False)
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


#: Seconds the CLI waits for the whole read (every list call) before giving up.
READ_TIMEOUT = 60.0


async def _read(kubeconfig: str | None) -> Manifests:
    from elasticquota.kube.client import make_api_client

    api = await make_api_client(kubeconfig)
    try:
        return await cluster_manifests(api)
    finally:
        await api.close()


async def read_cluster(kubeconfig: str | None, timeout: float = READ_TIMEOUT) -> Manifests:
    """``cluster_manifests`` of the kubeconfig's cluster within ``timeout`` seconds."""
    try:
        return await asyncio.wait_for(_read(kubeconfig), timeout)
    except ApiException as error:
        raise ClusterReadError(
            f"cannot read the cluster: {error.status} {error.reason}".strip()
        ) from error
    except TimeoutError as error:
        raise ClusterReadError(f"cannot read the cluster: no answer within {timeout:g}s") from error
    except (ConfigException, aiohttp.ClientError, OSError, ValueError) as error:
        text = " ".join(str(error).split()) or type(error).__name__
        raise ClusterReadError(f"cannot read the cluster: {text}") from error
