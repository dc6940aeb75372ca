"""Every object `plan` reads, fetched from a live cluster (for `explain`, `usage` and the tests).

``read_cluster`` reads them through ``cluster.read``: bounded in time, and whatever stops it (no
kubeconfig, a refused connection, a status error, the deadline) is one ``ClusterReadError`` whose
message is a single line for the command's stderr, never a traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.cli.cluster import ClusterTarget, listed, read, translate
from elasticquota.cli.errors import ClusterReadError
from elasticquota.kube.errors import read_json
from elasticquota.kube.quotas import (
    PROFILE_GROUP,
    PROFILE_PLURAL,
    PROFILE_VERSION,
    QUOTA_GROUP,
    QUOTA_PLURAL,
    list_namespace_quotas,
    list_quotas,
)
from elasticquota.plan.loader import Manifests


async def _raw_items(what: str, call: Callable[..., Any]) -> list[dict[str, Any]]:
    """A list call's items as plain dicts (the generated models are not what ``plan`` parses);
    an error status is checked as a preloaded call's (``read_json``: the server's Status kept)."""
    answer = await listed(what, read_json(await call(_preload_content=False)))
    items: list[dict[str, Any]] = answer["items"]
    return items


async def quota_objects(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every ElasticQuota (an error status names the list)."""
    return await listed(f"{QUOTA_PLURAL}.{QUOTA_GROUP}", list_quotas(api))


@dataclass(frozen=True, slots=True)
class VisibleQuotas:
    """The quotas a ``tree`` may draw, and whether only one namespace's could be read."""

    items: list[dict[str, Any]]
    only_namespace: str | None = None


async def visible_quotas(api: client.ApiClient, namespace: str | None) -> VisibleQuotas:
    """Every ElasticQuota; for one namespace's view, when its user may not list them across
    the cluster (403: bound to ``view`` in that namespace only, as the chart's aggregated role
    allows), the quotas of that namespace alone, without the quotas above them."""
    if namespace is None:
        return VisibleQuotas(await quota_objects(api))
    try:
        return VisibleQuotas(await list_quotas(api))
    except ApiException as error:
        if error.status != 403:
            raise translate(error, f"{QUOTA_PLURAL}.{QUOTA_GROUP}") from error
    what = f"{QUOTA_PLURAL}.{QUOTA_GROUP} in namespace {namespace}"
    return VisibleQuotas(await listed(what, list_namespace_quotas(api, namespace)), namespace)


async def cluster_manifests(api: client.ApiClient, budgets: bool = True) -> Manifests:
    """Quotas, profiles, pods, nodes and priority classes as the cluster holds them now, and its
    PodDisruptionBudgets unless ``budgets`` is False (a command that names no victim: neither
    their list request nor its refusal is then any of its business)."""
    core = client.CoreV1Api(api)
    objects = client.CustomObjectsApi(api)
    manifests = Manifests()
    manifests.quotas = [{"kind": "ElasticQuota", **quota} for quota in await quota_objects(api)]
    profiles = await listed(
        f"{PROFILE_PLURAL}.{PROFILE_GROUP}",
        objects.list_cluster_custom_object(PROFILE_GROUP, PROFILE_VERSION, PROFILE_PLURAL),
    )
    manifests.profiles = [{"kind": "ElasticQuotaProfile", **item} for item in profiles["items"]]
    manifests.pods = [
        {"apiVersion": "v1", "kind": "Pod", **pod}
        for pod in await _raw_items("pods", core.list_pod_for_all_namespaces)
    ]
    manifests.nodes = [
        {"apiVersion": "v1", "kind": "Node", **node}
        for node in await _raw_items("nodes", core.list_node)
    ]
    manifests.priority_classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", **item}
        for item in await _raw_items(
            "priorityclasses.scheduling.k8s.io", client.SchedulingV1Api(api).list_priority_class
        )
    ]
    if budgets:
        await read_budgets(api, manifests)
    return manifests


#: The versions PodDisruptionBudgets are listed in, the first the server serves: ``policy/v1``
#: from Kubernetes 1.21, ``policy/v1beta1`` before (and until 1.25).
BUDGET_VERSIONS = ("v1", "v1beta1")


async def read_budgets(api: client.ApiClient, manifests: Manifests) -> None:
    """Every PodDisruptionBudget into ``manifests.budgets``; a user whose RBAC does not let them
    be read (403) gets the rest and a line in ``manifests.unread`` (they only add notes)."""
    for version in BUDGET_VERSIONS:
        what = f"poddisruptionbudgets.policy ({version})"
        try:
            items = await _raw_items(what, functools.partial(_list_budgets, api, version))
        except ClusterReadError as error:
            cause = error.__cause__
            if isinstance(cause, ApiException) and cause.status == 404:
                continue
            if isinstance(cause, ApiException) and cause.status == 403:
                manifests.unread.append(
                    f"PodDisruptionBudgets not read ({error}): evictions they would refuse are "
                    "not shown"
                )
                return
            raise
        api_version = f"policy/{version}"
        manifests.budgets = [
            {"apiVersion": api_version, "kind": "PodDisruptionBudget", **item} for item in items
        ]
        return


async def _list_budgets(api: client.ApiClient, version: str, **options: Any) -> Any:
    return await api.call_api(
        f"/apis/policy/{version}/poddisruptionbudgets",
        "GET",
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        **options,
    )


async def read_cluster(target: ClusterTarget, budgets: bool = True) -> Manifests:
    """``cluster_manifests`` of the target's cluster, bounded in time (``cluster.read``)."""
    return await read(target, functools.partial(cluster_manifests, budgets=budgets))
