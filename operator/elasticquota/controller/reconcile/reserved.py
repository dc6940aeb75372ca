"""The reserved quotas every tree needs: root, system and default, created at start-up if missing.

As in the reference: ``koordinator-root-quota`` is a parent that does not lend; the system and
default quotas get the reference's default max (cpu in cores). Existing objects are never changed.
A request that fails is tried again until all three exist (``keep_reserved_quotas``): at a first
install the quota webhook's Service has no ready endpoint yet, and the API server refuses the
creation ("failed calling webhook").
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)


def reserved_manifests(namespace: str) -> list[dict[str, Any]]:
    """The three reserved quotas as manifests."""
    reserved_max = {"cpu": str(keys.RESERVED_GROUP_MAX), "memory": str(keys.RESERVED_GROUP_MAX)}

    def quota(name: str, labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": keys.QUOTA_KIND,
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec,
        }

    return [
        quota(
            keys.ROOT_QUOTA,
            {keys.LABEL_IS_PARENT: "true", keys.LABEL_ALLOW_LENT: "false", keys.LABEL_PARENT: ""},
            {},
        ),
        quota(keys.SYSTEM_QUOTA, {keys.LABEL_PARENT: keys.ROOT_QUOTA}, {"max": reserved_max}),
        quota(keys.DEFAULT_QUOTA, {keys.LABEL_PARENT: keys.ROOT_QUOTA}, {"max": reserved_max}),
    ]


async def ensure_reserved_quotas(cluster: Cluster, state: ControllerState, namespace: str) -> None:
    """Create the namespace and whichever reserved quota does not exist yet."""
    missing = [
        manifest
        for manifest in reserved_manifests(namespace)
        if not any(name == manifest["metadata"]["name"] for _, name in state.quotas)
    ]
    if not missing:
        return
    await cluster.ensure_namespace(namespace)
    for manifest in missing:
        created = await cluster.create_quota(manifest)
        if created is not None:
            logger.info("created reserved quota %s/%s", namespace, manifest["metadata"]["name"])
            state.keep_created(created)


async def keep_reserved_quotas(
    cluster: Cluster, state: ControllerState, namespace: str, leading: asyncio.Event, retry: float
) -> None:
    """``ensure_reserved_quotas`` once memory is synced, while this replica leads, until it is
    done; a failed request is logged and tried again after ``retry`` seconds. (It ended the loop,
    and so the operator, which restarted into the same refusal: at a first install the quota
    webhook, served by the operator itself, has no ready endpoint when the creation is sent.)"""
    outage = OutageLog(logger, "reserved quota creation")
    await state.synced.wait()
    while True:
        await leading.wait()
        try:
            await ensure_reserved_quotas(cluster, state, namespace)
        except NotLeadingError:
            pass  # lost the Lease meanwhile: until it is held again
        except Exception as error:  # an API error: tried again (a bug is logged each time too)
            outage.failed(f"the reserved quotas in {namespace}", error)
        else:
            outage.succeeded()
            return
        await asyncio.sleep(retry)
