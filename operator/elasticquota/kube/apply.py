"""Create the objects of a set of manifests (the demo and the tests apply ``examples/`` with it).

Handles the kinds ``plan`` reads: Namespace, PriorityClass, Node (its status is written through the
status subresource, as a kubelet would), Pod (``spec.nodeName`` binds it at creation; a bound pod's
status, e.g. phase Running and its startTime, is written as its kubelet would), ElasticQuota
and ElasticQuotaProfile. Objects that already exist are left as they are.
"""

from __future__ import annotations

import copy
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.quotas import (
    MERGE_PATCH,
    PROFILE_GROUP,
    PROFILE_PLURAL,
    PROFILE_VERSION,
    create_quota,
)


async def _create_node(api: client.ApiClient, manifest: dict[str, Any]) -> None:
    core = client.CoreV1Api(api)
    body = copy.deepcopy(manifest)
    status = body.pop("status", None)
    await core.create_node(body)
    if status:
        await core.patch_node_status(
            manifest["metadata"]["name"], {"status": status}, _content_type=MERGE_PATCH
        )


async def _create_pod(api: client.ApiClient, manifest: dict[str, Any]) -> None:
    """Create the pod; a bound pod's status (phase, startTime) is then written as its kubelet
    would have, so the cluster holds what the manifest says (``plan`` reads the same status)."""
    body = copy.deepcopy(manifest)
    status = body.pop("status", None)
    core = client.CoreV1Api(api)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    await core.create_namespaced_pod(namespace, body)
    if status and body.get("spec", {}).get("nodeName"):
        await core.patch_namespaced_pod_status(
            name, namespace, {"status": status}, _content_type=MERGE_PATCH
        )


async def _create_profile(api: client.ApiClient, manifest: dict[str, Any]) -> None:
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        PROFILE_GROUP, PROFILE_VERSION, manifest["metadata"]["namespace"], PROFILE_PLURAL, manifest
    )


async def apply_manifest(api: client.ApiClient, manifest: dict[str, Any]) -> bool:
    """Create one object; False when it already existed. Raises ValueError for other kinds."""
    kind = manifest.get("kind")
    try:
        if kind == "Namespace":
            await client.CoreV1Api(api).create_namespace(manifest)
        elif kind == "PriorityClass":
            await client.SchedulingV1Api(api).create_priority_class(manifest)
        elif kind == "Node":
            await _create_node(api, manifest)
        elif kind == "Pod":
            await _create_pod(api, manifest)
        elif kind == "ElasticQuota":
            return await create_quota(api, manifest) is not None
        elif kind == "ElasticQuotaProfile":
            await _create_profile(api, manifest)
        else:
            raise ValueError(f"cannot apply kind {kind!r}")
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True


APPLY_ORDER = ("Namespace", "PriorityClass", "Node", "ElasticQuotaProfile", "ElasticQuota", "Pod")


def apply_order(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces first, pods last: everything a later object refers to exists before it."""
    rank = {kind: position for position, kind in enumerate(APPLY_ORDER)}
    return sorted(manifests, key=lambda item: rank.get(str(item.get("kind")), len(rank)))
