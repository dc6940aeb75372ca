"""A user limit enforced by the validating pod webhook on an API server without scheduling gates.

The suite's API server (1.20) has no pod scheduling gates, so the operator cannot hold a pod back;
with ``USER_LIMITS_REFUSE_PODS`` its validating pod webhook refuses a new pod that would break its
user's limit. User sue (impersonated, so the mutating webhook stamps her identity from the real
request) runs a pod of 4 cpu bound to a node in a quota that limits her to 5 cpu: her next pod of
2 cpu is refused with the user, quota, resource and numbers; one of 1 cpu (exactly at the limit)
is admitted; another user is not concerned. ``elastic-quota usage users sue -A -o json`` then
reads the same cluster and shows her usage under the limit.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

import harness
import pytest
from kubernetes_asyncio import client
from webhook_operator import WebhookOperator, create_quota, refusal, running, wait_serving

from elasticquota.core.keys import ANNO_USER_LIMITS
from elasticquota.kube.apply import apply_manifest

pytestmark = pytest.mark.timeout(300)

LIMITS = '[{"limit": "specific user", "users": ["sue"], "maxresources": {"cpu": "5"}}]'


async def cli(*argv: str) -> tuple[int, str, str]:
    """``elastic-quota ARGV`` in a process of its own (KUBECONFIG: the suite's cluster)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "elasticquota", *argv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode or 0, out.decode(), err.decode()


@pytest.fixture
async def node(api: client.ApiClient) -> AsyncIterator[str]:
    name = harness.unique("node")
    await apply_manifest(api, harness.node_manifest(name, "100", "100Gi"))
    yield name
    await client.CoreV1Api(api).delete_node(name)


async def test_the_pod_webhook_refuses_a_pod_over_its_users_limit_without_gates(
    api: client.ApiClient,
    as_sue: client.ApiClient,
    sue_namespace: str,
    node: str,
) -> None:
    operator = WebhookOperator(env={"ELASTIC_QUOTA_USER_LIMITS_REFUSE_PODS": "true"})
    async with running(api, operator):
        await wait_serving(api, operator)
        ten = {"cpu": "10", "memory": "10Gi"}
        quota = harness.quota_manifest(
            sue_namespace, sue_namespace, ten, ten, annotations={ANNO_USER_LIMITS: LIMITS}
        )
        await create_quota(api, quota)
        mine = client.CoreV1Api(as_sue)
        running_pod = harness.pod_manifest(sue_namespace, "sue-running", "4", "1Gi", node=node)
        await mine.create_namespaced_pod(sue_namespace, running_pod)

        async def counted() -> bool:
            used = (await harness.get_quota(api, sue_namespace, sue_namespace)).get("status", {})
            return bool(used.get("used", {}).get("cpu") == "4")

        await harness.eventually(counted, 60, operator.process, "sue's bound pod is counted")

        message = await refusal(
            mine.create_namespaced_pod(
                sue_namespace, harness.pod_manifest(sue_namespace, "sue-big", "2", "1Gi")
            )
        )
        assert (
            f"pod {sue_namespace}/sue-big would break a user or group limit: user sue at quota "
            f"{sue_namespace}: cpu: requested 2, used 4 of limit 5 (user limit specific user)"
        ) in message
        assert "no scheduling gates" in message

        at_limit = harness.pod_manifest(sue_namespace, "sue-small", "1", "1Gi")
        created = await mine.create_namespaced_pod(sue_namespace, at_limit)
        assert created.metadata.name == "sue-small"
        other = harness.pod_manifest(sue_namespace, "admin-big", "3", "1Gi")
        admins = client.CoreV1Api(api)
        assert (await admins.create_namespaced_pod(sue_namespace, other)).metadata.name

        code, out, err = await cli("usage", "users", "sue", "-A", "-o", "json")
        assert code == 0, err
        print(f"elastic-quota usage users sue -A -o json:\n{out}")
        assert json.loads(out) == {
            "apiVersion": "elastic-quota.cli/v1",
            "kind": "UserUsage",
            "users": {
                "sue": {
                    sue_namespace: {
                        "used": {"cpu": "4", "memory": "1Gi", "pods": "1"},
                        "applications": 1,
                        "maxResources": {"cpu": "5"},
                        "maxApplications": None,
                        "limit": "specific user",
                    }
                }
            },
        }
        code, out, err = await cli("usage", "users", "nobody-here", "-A")
        assert (code, out) == (1, "")
        assert err.startswith("error: user nobody-here has no usage") and err.count("\n") == 1
