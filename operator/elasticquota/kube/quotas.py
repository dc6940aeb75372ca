"""ElasticQuota I/O: merge patches of annotations/labels/spec, the status subresource, creation.

Every write is a JSON merge patch (the reference's format; kubernetes_asyncio would otherwise send
a JSON patch) retried on conflicts, throttling and server errors. The returned object is the
server's view after the write, which the caller keeps as the current state. The quota patches are
also built as requests ready to send (``quota_patch``, ``quota_status_patch``): the ``Cluster``
adapter sends them with its retries, one call of ours from the port to the library.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import START_UP_ATTEMPTS, with_retries

QUOTA_GROUP = "scheduling.sigs.k8s.io"
QUOTA_VERSION = "v1alpha1"
QUOTA_PLURAL = "elasticquotas"
PROFILE_GROUP = "quota.koordinator.sh"
PROFILE_VERSION = "v1alpha1"
PROFILE_PLURAL = "elasticquotaprofiles"
MERGE_PATCH = "application/merge-patch+json"
QUOTAS = (QUOTA_GROUP, QUOTA_VERSION, QUOTA_PLURAL)
PROFILES = (PROFILE_GROUP, PROFILE_VERSION, PROFILE_PLURAL)


def _objects(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


class Request(NamedTuple):
    """A request ready for ``kube.errors.with_retries``: the library's call with its arguments
    bound (no function of ours between the retries and the request) and what it does (logs)."""

    call: Callable[[], Awaitable[dict[str, Any]]]
    what: str


def merge_patch_request(
    api: client.ApiClient,
    resource: tuple[str, str, str],
    namespace: str,
    name: str,
    body: dict[str, Any],
    subresource: str = "",
) -> Request:
    """One JSON merge patch of a custom object (or its status), ready to send."""
    group, version, plural = resource
    objects = _objects(api)
    send = (
        objects.patch_namespaced_custom_object_status
        if subresource == "status"
        else objects.patch_namespaced_custom_object
    )
    kind = "ElasticQuota" if plural == QUOTA_PLURAL else "ElasticQuotaProfile"
    call = functools.partial(
        send, group, version, namespace, plural, name, body, _content_type=MERGE_PATCH
    )
    return Request(call, f"patch {kind} {namespace}/{name} {subresource}".rstrip())


def quota_patch(api: client.ApiClient, namespace: str, name: str, patch: dict[str, Any]) -> Request:
    """The merge patch of a quota object (metadata and spec), ready to send."""
    return merge_patch_request(api, QUOTAS, namespace, name, patch)


def quota_status_patch(
    api: client.ApiClient, namespace: str, name: str, status: dict[str, Any]
) -> Request:
    """The merge patch of a quota's status subresource, ready to send."""
    return merge_patch_request(api, QUOTAS, namespace, name, {"status": status}, "status")


async def patch_quota(
    api: client.ApiClient, namespace: str, name: str, patch: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch the quota object (metadata and spec; its status too where the CRD has no status
    subresource), with retries."""
    return await with_retries(*quota_patch(api, namespace, name, patch))


async def create_quota(api: client.ApiClient, body: dict[str, Any]) -> dict[str, Any] | None:
    """Create a quota; None when it already exists (someone else was faster)."""
    namespace = body["metadata"]["namespace"]

    async def create() -> dict[str, Any] | None:
        try:
            created: dict[str, Any] = await _objects(api).create_namespaced_custom_object(
                QUOTA_GROUP, QUOTA_VERSION, namespace, QUOTA_PLURAL, body
            )
        except ApiException as error:
            if error.status == 409:  # AlreadyExists is final: not a conflict to retry
                return None
            raise
        return created

    return await with_retries(
        create, f"create ElasticQuota {namespace}/{body['metadata']['name']}", attempts=3
    )


async def patch_profile(
    api: client.ApiClient, namespace: str, name: str, patch: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch an ElasticQuotaProfile (the tree-id label the controller writes back)."""
    return await with_retries(*merge_patch_request(api, PROFILES, namespace, name, patch))


async def list_quotas(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every ElasticQuota in the cluster."""
    response = await _objects(api).list_cluster_custom_object(
        QUOTA_GROUP, QUOTA_VERSION, QUOTA_PLURAL
    )
    items: list[dict[str, Any]] = response.get("items", [])
    return items


async def list_namespace_quotas(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """The ElasticQuotas of one namespace (what a user bound to ``view`` there may list)."""
    response = await _objects(api).list_namespaced_custom_object(
        QUOTA_GROUP, QUOTA_VERSION, namespace, QUOTA_PLURAL
    )
    items: list[dict[str, Any]] = response.get("items", [])
    return items


async def ensure_namespace(api: client.ApiClient, name: str) -> None:
    """Create the namespace unless it exists (409 AlreadyExists is final, not a conflict to retry);
    transient failures retried: a start-up step (``START_UP_ATTEMPTS``)."""

    async def create() -> None:
        try:
            await client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
        except ApiException as error:
            if error.status != 409:
                raise

    await with_retries(create, f"create namespace {name}", START_UP_ATTEMPTS)
