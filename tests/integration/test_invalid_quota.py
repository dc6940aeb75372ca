"""A quota made invalid where no webhook guards (webhooks off, as the harness runs the operator).

On the real API server: a valid quota gets its figures; edited to min > max it is left out of its
tree, so its figures (annotations and ``status.used``) are removed and
``elasticquota.dev/invalid`` names the rule, written once; its sibling keeps being computed and
written meanwhile; fixed, it gets its figures back and loses the marker.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import harness
import pytest
from kubernetes_asyncio import client

from elasticquota.core import keys
from elasticquota.core.decisions.diff import CLEARED_WHEN_INVALID
from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.quotas import patch_quota

pytestmark = pytest.mark.timeout(180)


def annotations_of(quota: dict[str, Any]) -> dict[str, str]:
    return dict(quota["metadata"].get("annotations") or {})


async def test_an_invalid_quota_loses_its_figures_until_it_is_fixed(api: client.ApiClient) -> None:
    tag = uuid.uuid4().hex[:6]
    namespace, dept, team, other = f"inv-{tag}", f"dept-{tag}", f"team-{tag}", f"other-{tag}"
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(api, harness.node_manifest(f"node-{tag}", "8", "32Gi"))
    await apply_manifest(
        api, harness.quota_manifest(namespace, dept, {"cpu": "4"}, {"cpu": "8"}, is_parent=True)
    )
    for leaf in (team, other):
        await apply_manifest(
            api, harness.quota_manifest(namespace, leaf, {"cpu": "2"}, {"cpu": "8"}, parent=dept)
        )
        await apply_manifest(
            api,
            harness.pod_manifest(
                namespace, f"p-{leaf}", "1", labels={keys.POD_LABEL_QUOTA: leaf}, node=f"node-{tag}"
            ),
        )
    async with harness.active_operator(f"inv-{tag}") as operator:
        await harness.until_converged(api, 60, operator, "every quota written")
        valid = await harness.get_quota(api, namespace, team)
        assert keys.ANNO_RUNTIME in annotations_of(valid)
        assert valid["status"]["used"]["cpu"] == "1"

        # through no webhook: min above max
        await patch_quota(api, namespace, team, {"spec": {"min": {"cpu": "10"}}})

        async def marked() -> bool:
            return keys.ANNO_INVALID in annotations_of(
                await harness.get_quota(api, namespace, team)
            )

        await harness.eventually(marked, 30, operator, "the invalid quota is marked")
        await asyncio.sleep(2)  # several reports and reconcile passes: the mark is written once
        invalid = await harness.get_quota(api, namespace, team)
        annotations = annotations_of(invalid)
        assert "spec.min.cpu" in annotations[keys.ANNO_INVALID]
        assert "greater than spec.max.cpu" in annotations[keys.ANNO_INVALID]
        assert not set(annotations) & set(CLEARED_WHEN_INVALID), annotations
        assert not (invalid.get("status") or {}).get("used")
        # the others are still computed and written: the pod of the invalid quota now counts in
        # the default quota, the sibling keeps its figures
        await harness.until_converged(api, 30, operator, "the others written")
        sibling = annotations_of(await harness.get_quota(api, namespace, other))
        assert json.loads(sibling[keys.ANNO_REQUEST]) == {"cpu": "1"}
        version = invalid["metadata"]["resourceVersion"]
        await asyncio.sleep(2)
        assert (await harness.get_quota(api, namespace, team))["metadata"][
            "resourceVersion"
        ] == version

        # fixed: the figures come back, the marker goes
        await patch_quota(api, namespace, team, {"spec": {"min": {"cpu": "2"}}})

        async def restored() -> bool:
            quota = await harness.get_quota(api, namespace, team)
            annotations = annotations_of(quota)
            return (
                keys.ANNO_INVALID not in annotations
                and keys.ANNO_RUNTIME in annotations
                and (quota.get("status") or {}).get("used", {}).get("cpu") == "1"
            )

        await harness.eventually(restored, 30, operator, "the fixed quota's figures are back")
        await harness.until_converged(api, 30, operator, "everything converged")
