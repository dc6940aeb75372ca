"""Create the objects of a set of manifests (the demo and the tests apply ``examples/`` with it).

Handles the kinds ``plan`` reads: Namespace, PriorityClass, Node (its status is written through the
status subresource, as a kubelet would), Pod (``spec.nodeName`` binds it at creation; a bound pod's
status, e.g. phase Running and its startTime, is written as its kubelet would), ElasticQuota
and ElasticQuotaProfile. Objects that already exist are left as they are.

A pod created right after its PriorityClass can be refused for it ("no PriorityClass with name
... was found", 403): the API server's Priority admission reads the classes from an informer's
cache, which can lag behind the class's creation by a moment (seen on a loaded 2-core machine).
Such a refusal is tried again for up to ``PRIORITY_CLASS_WAIT`` seconds when the class exists;
when it does not, the refusal is the answer.
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.quotas import (
    MERGE_PATCH,
    PROFILE_GROUP,
    PROFILE_PLURAL,
    PROFILE_VERSION,
    create_quota,
)

#: Seconds a pod refused for a PriorityClass that exists is tried again (the admission's cache).
PRIORITY_CLASS_WAIT: Final = 10.0
#: Seconds between two tries.
PRIORITY_CLASS_RETRY: Final = 0.2


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
    deadline = time.monotonic() + PRIORITY_CLASS_WAIT
    while True:
        try:
            await core.create_namespaced_pod(namespace, body)
            break
        except ApiException as error:
            if time.monotonic() > deadline or not await _class_not_seen_yet(api, body, error):
                raise
        await asyncio.sleep(PRIORITY_CLASS_RETRY)
    if status and body.get("spec", {}).get("nodeName"):
        await core.patch_namespaced_pod_status(
            name, namespace, {"status": status}, _content_type=MERGE_PATCH
        )


async def _class_not_seen_yet(
    api: client.ApiClient, pod: dict[str, Any], error: ApiException
) -> bool:
    """Whether ``error`` refused the pod for its PriorityClass although the class exists: the
    Priority admission's cache has not seen it yet."""
    priority_class = pod.get("spec", {}).get("priorityClassName")
    if error.status != 403 or not priority_class or "PriorityClass" not in str(error.body):
        return False
    try:
        await client.SchedulingV1Api(api).read_priority_class(priority_class)
    except ApiException:
        return False  # not there (or not readable): the refusal stands
    return True


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
