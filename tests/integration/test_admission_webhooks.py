"""Admission webhooks through the real API server: the operator serves them over HTTPS with its
self-signed certificate and manages the webhook configurations itself (Kopf's managed mode).

The API server then refuses broken quotas and pods with the operator's message, and fills in the
defaults of new quotas. The webhooks live only while the test's operator runs: it removes them
when it stops, and the fixture deletes the configurations whatever happens, so that no other test
of the session meets them. The refusal messages are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import base64
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
from harness import (
    OperatorProcess,
    ensure_namespace,
    eventually,
    free_port,
    get_quota,
    pod_manifest,
    quota_manifest,
)
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.certs import self_signed_certificate
from elasticquota.core import keys
from elasticquota.kube.client import make_api_client
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION, patch_quota

pytestmark = pytest.mark.timeout(300)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    api = await make_api_client()
    yield api
    await api.close()


class WebhookOperator:
    """An operator process serving the webhooks on loopback, and its configurations' name."""

    def __init__(self, *extra: str) -> None:
        self.configuration = f"{unique('eq')}.elasticquota.dev"
        self.process = OperatorProcess(
            unique("webhooks"),
            "--webhook-port", str(free_port()),
            "--webhook-address", "127.0.0.1",
            "--webhook-configuration", self.configuration,
            *extra,
        )  # fmt: skip

    async def configurations(self, api: client.ApiClient) -> list[list[str]]:
        """The webhook names of the validating and the mutating configuration ([] if absent)."""
        registration = client.AdmissionregistrationV1Api(api)
        found = []
        for read in (
            registration.read_validating_webhook_configuration,
            registration.read_mutating_webhook_configuration,
        ):
            try:
                configuration = await read(self.configuration)
            except ApiException as error:
                if error.status != 404:
                    raise
                found.append([])
                continue
            found.append(sorted(hook.name for hook in configuration.webhooks or []))
        return found

    async def delete_configurations(self, api: client.ApiClient) -> None:
        registration = client.AdmissionregistrationV1Api(api)
        for delete in (
            registration.delete_validating_webhook_configuration,
            registration.delete_mutating_webhook_configuration,
        ):
            try:
                await delete(self.configuration)
            except ApiException as error:
                if error.status != 404:
                    raise


@contextlib.asynccontextmanager
async def running(api: client.ApiClient, operator: WebhookOperator) -> AsyncIterator[None]:
    """The operator runs inside; afterwards its configurations are gone, whatever happened."""
    operator.process.start()
    try:
        yield
    finally:
        operator.process.stop()
        await operator.delete_configurations(api)


@pytest.fixture
async def webhooks(api: client.ApiClient) -> AsyncIterator[WebhookOperator]:
    operator = WebhookOperator()
    async with running(api, operator):
        yield operator


async def create_quota(api: client.ApiClient, body: dict[str, Any], **options: Any) -> Any:
    return await client.CustomObjectsApi(api).create_namespaced_custom_object(
        QUOTA_GROUP, QUOTA_VERSION, body["metadata"]["namespace"], QUOTA_PLURAL, body, **options
    )


async def refusal(call: Awaitable[Any]) -> str:
    """The API server's message for a request it refuses (the test fails if it is accepted)."""
    with pytest.raises(ApiException) as caught:
        await call
    message: str = json.loads(caught.value.body)["message"]
    print(f"\nrefused ({caught.value.status}): {message}")
    return message


async def wait_serving(api: client.ApiClient, webhooks: WebhookOperator) -> None:
    """Until the API server calls the operator: a dry-run create of a broken quota is refused."""
    await webhooks.process.wait_ready()
    probe = quota_manifest("default", unique("probe"), {"cpu": "2"}, {"cpu": "1"})

    async def refused() -> bool:
        try:
            await create_quota(api, probe, dry_run="All")
        except ApiException as error:
            return "min 2 > max 1" in json.loads(error.body)["message"]
        return False

    await eventually(refused, 60, webhooks.process, "the webhooks answer the API server")


async def test_the_api_server_refuses_what_the_rules_refuse_and_fills_defaults(
    api: client.ApiClient, webhooks: WebhookOperator
) -> None:
    await wait_serving(api, webhooks)
    suffix = webhooks.configuration
    assert await webhooks.configurations(api) == [
        [f"validate-elasticquota.{suffix}", f"validate-pod.{suffix}"],
        [f"mutate-elasticquota.{suffix}", f"mutate-pod.{suffix}"],
    ]
    namespace = unique("admit")
    await ensure_namespace(api, namespace)
    dept, team, other = unique("dept"), unique("team"), unique("other")
    tree = unique("tree")

    # a broken quota is refused with the rule and the numbers
    broken = quota_manifest(namespace, unique("broken"), {"cpu": "5"}, {"cpu": "4"})
    message = await refusal(create_quota(api, broken))
    assert message == (
        f'admission webhook "validate-elasticquota.{suffix}" denied the request: '
        f"resourceKey cpu of quota {broken['metadata']['name']} min 5 > max 4"
    )

    # a parent, and at once a child: the child inherits the tree id and gets its shared weight
    parent = quota_manifest(namespace, dept, {"cpu": "4"}, {"cpu": "8"}, is_parent=True)
    parent["metadata"]["labels"][keys.LABEL_TREE_ID] = tree
    await create_quota(api, parent)
    await create_quota(
        api, quota_manifest(namespace, team, {"cpu": "3"}, {"cpu": "8"}, parent=dept)
    )
    child = await get_quota(api, namespace, team)
    assert child["metadata"]["labels"][keys.LABEL_TREE_ID] == tree
    assert child["metadata"]["annotations"][keys.ANNO_SHARED_WEIGHT] == '{"cpu":"8"}'
    top = quota_manifest(namespace, other, {}, {"cpu": "2", "memory": "4Gi"})
    await create_quota(api, top)
    created = await get_quota(api, namespace, other)
    assert created["metadata"]["labels"][keys.LABEL_PARENT] == keys.ROOT_QUOTA
    assert created["metadata"]["annotations"][keys.ANNO_SHARED_WEIGHT] == (
        '{"cpu":"2","memory":"4Gi"}'
    )

    # the children's min must fit in the parent's
    greedy = quota_manifest(namespace, unique("greedy"), {"cpu": "2"}, {"cpu": "8"}, parent=dept)
    message = await refusal(create_quota(api, greedy))
    assert (
        f"checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: {dept} (sum of its "
        f"children's min with {greedy['metadata']['name']}: cpu 5; {dept}'s min: cpu 4)"
    ) in message
    orphan = quota_manifest(namespace, unique("orphan"), {}, {"cpu": "1"}, parent="no-such-dept")
    assert "parent not exist" in await refusal(create_quota(api, orphan))

    # quota names are global: the same name in another namespace is refused, naming both
    elsewhere = unique("elsewhere")
    await ensure_namespace(api, elsewhere)
    squatter = quota_manifest(elsewhere, other, {}, {"cpu": "2", "memory": "4Gi"})
    message = await refusal(create_quota(api, squatter))
    assert (
        f"AddQuota quota already exist:{other} (quota {other} in namespace {elsewhere}: a quota "
        f"{other} already exists in namespace {namespace}; quota names are unique across "
        "namespaces)"
    ) in message

    # no pods in a parent quota; the preemptible label never changes
    core = client.CoreV1Api(api)
    in_parent = pod_manifest(namespace, "in-parent", "1", labels={keys.POD_LABEL_QUOTA: dept})
    message = await refusal(core.create_namespaced_pod(namespace, in_parent))
    assert f"pod can not be linked to a parentQuotaGroup,quota:{dept}, pod:in-parent" in message
    labels = {keys.POD_LABEL_QUOTA: team, keys.POD_LABEL_PREEMPTIBLE: "true"}
    await core.create_namespaced_pod(
        namespace, pod_manifest(namespace, "worker", "1", labels=labels)
    )
    relabel = {"metadata": {"labels": {keys.POD_LABEL_PREEMPTIBLE: "false"}}}
    message = await refusal(core.patch_namespaced_pod("worker", namespace, relabel))
    assert "Preemptible label is forbidden modify now." in message

    # a parent with children stays a parent and cannot be deleted
    demote = {"metadata": {"labels": {keys.LABEL_IS_PARENT: None}}}
    message = await refusal(patch_quota(api, namespace, dept, demote))
    assert f"quota has children, isParent is forbidden to modify as false, quotaName:{dept}" in (
        message
    )
    message = await refusal(
        client.CustomObjectsApi(api).delete_namespaced_custom_object(
            QUOTA_GROUP, QUOTA_VERSION, namespace, QUOTA_PLURAL, dept
        )
    )
    assert f"delete quota failed, quota {dept} has 1 child quotas: {team}" in message

    # the operator's own writes still pass (annotations and status of the quotas it computes)
    async def written() -> bool:
        quota = await get_quota(api, namespace, team)
        return keys.ANNO_RUNTIME in (quota["metadata"].get("annotations") or {})

    await eventually(written, 30, webhooks.process, "the operator wrote the child's runtime")

    # a replica that stops cleanly takes its webhooks away
    webhooks.process.stop()
    assert await webhooks.configurations(api) == [[], []]
    await core.delete_namespace(namespace)  # its own tree id: leave no extra tree to later tests
    await core.delete_namespace(elsewhere)


async def test_a_provided_certificate_is_served_and_is_the_ca_bundle(
    api: client.ApiClient, tmp_path: Path
) -> None:
    certificate, key = self_signed_certificate(["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(certificate)
    (tmp_path / "tls.key").write_bytes(key)
    operator = WebhookOperator(
        "--webhook-cert", str(tmp_path / "tls.crt"), "--webhook-key", str(tmp_path / "tls.key")
    )
    async with running(api, operator):
        await wait_serving(api, operator)
        configuration = await client.AdmissionregistrationV1Api(
            api
        ).read_validating_webhook_configuration(operator.configuration)
        bundles = {hook.client_config.ca_bundle for hook in configuration.webhooks}
        assert bundles == {base64.b64encode(certificate).decode()}
