"""The reserved quotas every tree needs: root, system and default, created at start-up if missing.

As in the reference: ``koordinator-root-quota`` is a parent that does not lend; the system and
default quotas get the reference's default max (cpu in cores). Existing objects are never changed.
"""

from __future__ import annotations

import logging
from typing import Any

from elasticquota.controller.cluster import Cluster
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

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
