"""A quota's own minimum runtime (``elasticquota.dev/revocation-min-runtime``), live: the operator
reads it from the watched quota, without ``REVOCATION_MIN_RUNTIME``.

The tree and the round are ``test_revocation_live``'s: the borrower runs three 2-cpu pods, the
lender asks for its min and the borrower's runtime drops to 5, so one pod goes. The reference's
victim is b-young (started last); the borrower asks for 10 minutes, b-young has run seconds and
b-old an hour, so b-old goes.
"""

from __future__ import annotations

import time

import pytest
from kubernetes_asyncio import client
from test_revocation_live import MERGE_PATCH, borrower_of_three, only_one_goes

from elasticquota.core import keys

pytestmark = pytest.mark.timeout(180)


async def test_the_quotas_own_minimum_runtime_spares_its_young_pod(api: client.ApiClient) -> None:
    pool, namespace = await borrower_of_three(api, "own", "b-old", "b-young")
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    await client.CoreV1Api(api).patch_namespaced_pod_status(
        "b-old", namespace, {"status": {"startTime": an_hour_ago}}, _content_type=MERGE_PATCH
    )
    await client.CustomObjectsApi(api).patch_namespaced_custom_object(
        "scheduling.sigs.k8s.io", "v1alpha1", namespace, "elasticquotas", f"borrower-{pool}",
        {"metadata": {"annotations": {keys.ANNO_REVOCATION_MIN_RUNTIME: "10m"}}},
        _content_type=MERGE_PATCH,
    )  # fmt: skip
    async with only_one_goes(api, pool, namespace, {}, "b-old", "b-young"):
        events = await client.CoreV1Api(api).list_namespaced_event(namespace)
        (told,) = [event.message for event in events.items if event.reason == "QuotaOverUsed"]
        assert f"evicting: {namespace}/b-old; spared until they have run 600s: " in told
        assert f"{namespace}/b-young (until " in told
