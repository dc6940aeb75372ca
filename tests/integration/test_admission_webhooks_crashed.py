"""Admission webhooks through the real API server after the operator crashed (SIGKILL): its webhook
configurations stay registered and nothing answers them.

Then the API server admits pods (pod webhooks fail open by default) and refuses quota writes
(quota webhooks fail closed); with the pod webhooks set to Fail, pods of kube-system and of the
operator's own namespace are still admitted (namespaceSelector). The refusal messages are printed
(``pytest -s`` shows them).
"""

from __future__ import annotations

import contextlib

import harness
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from webhook_operator import (
    WebhookOperator,
    crashed_with_configurations,
    create_quota,
    refusal,
    running,
    wait_serving,
)

from elasticquota.controller.webhooks.identity import workload_webhooks
from elasticquota.kube.quotas import patch_quota

pytestmark = pytest.mark.timeout(300)


async def labelled_with_its_name(api: client.ApiClient, namespace: str) -> None:
    """The ``kubernetes.io/metadata.name`` label the pod webhooks' namespaceSelector reads: API
    servers set it since 1.21; on older ones (this suite's) the docs tell users to set it."""
    await harness.ensure_namespace(api, namespace)
    label = {"metadata": {"labels": {"kubernetes.io/metadata.name": namespace}}}
    await client.CoreV1Api(api).patch_namespace(namespace, label)


async def test_a_crashed_operator_blocks_no_pod_and_every_quota_write(
    api: client.ApiClient,
) -> None:
    namespace = harness.unique("managed")
    await harness.ensure_namespace(api, namespace)
    operator = WebhookOperator()
    async with running(api, operator):
        await wait_serving(api, operator)
        suffix = operator.configuration
        policies = {
            name: hook.failure_policy for name, hook in (await operator.registered(api)).items()
        }
        assert policies == {
            f"validate-elasticquota.{suffix}": "Fail",
            f"mutate-elasticquota.{suffix}": "Fail",
            f"validate-pod.{suffix}": "Ignore",
            f"mutate-pod.{suffix}": "Ignore",
            **{f"{webhook}.{suffix}": "Ignore" for _, webhook, _ in workload_webhooks()},
        }
        team = harness.quota_manifest(namespace, harness.unique("team"), {"cpu": "1"}, {"cpu": "2"})
        await create_quota(api, team)
        await crashed_with_configurations(api, operator)

        core = client.CoreV1Api(api)
        await core.create_namespaced_pod(
            namespace, harness.pod_manifest(namespace, "admitted", "1")
        )
        await core.read_namespaced_pod("admitted", namespace)
        other = harness.quota_manifest(
            namespace, harness.unique("other"), {"cpu": "1"}, {"cpu": "2"}
        )
        message = await refusal(create_quota(api, other))
        assert f'failed calling webhook "mutate-elasticquota.{suffix}"' in message
        raise_max = {"spec": {"max": {"cpu": "3"}}}
        message = await refusal(patch_quota(api, namespace, team["metadata"]["name"], raise_max))
        assert f'failed calling webhook "validate-elasticquota.{suffix}"' in message
    await client.CoreV1Api(api).delete_namespace(namespace)


async def test_pod_webhooks_never_see_kube_system_nor_the_operators_namespace(
    api: client.ApiClient,
) -> None:
    """Even failing closed: a crashed operator then blocks the pods of a managed namespace only."""
    managed, own = harness.unique("managed"), harness.unique("eq-system")
    await harness.ensure_namespace(api, managed)
    for namespace in ("kube-system", own):
        await labelled_with_its_name(api, namespace)
    operator = WebhookOperator(
        "--pod-webhook-failure-policy", "Fail", env={"ELASTIC_QUOTA_LEASE_NAMESPACE": own}
    )
    core = client.CoreV1Api(api)
    probe = harness.unique("probe")
    async with running(api, operator):
        await wait_serving(api, operator)
        suffix = operator.configuration
        registered = await operator.registered(api)
        for name in (f"validate-pod.{suffix}", f"mutate-pod.{suffix}"):
            assert registered[name].failure_policy == "Fail"
            (expression,) = registered[name].namespace_selector.match_expressions
            assert (expression.key, expression.operator) == ("kubernetes.io/metadata.name", "NotIn")
            assert {"kube-system", own} <= set(expression.values), expression
        await crashed_with_configurations(api, operator)

        message = await refusal(
            core.create_namespaced_pod(managed, harness.pod_manifest(managed, probe, "1"))
        )
        assert f'failed calling webhook "mutate-pod.{suffix}"' in message
        try:
            for namespace in ("kube-system", own):
                await core.create_namespaced_pod(
                    namespace, harness.pod_manifest(namespace, probe, "1")
                )
        finally:
            with contextlib.suppress(ApiException):
                await core.delete_namespaced_pod(probe, "kube-system", grace_period_seconds=0)
    for namespace in (managed, own):
        await core.delete_namespace(namespace)
