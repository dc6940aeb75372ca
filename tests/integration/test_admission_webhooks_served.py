"""Admission webhooks through the real API server, while the operator serves them: over HTTPS with
its self-signed certificate (or a provided one, which is then the configurations' caBundle), the
webhook configurations managed by the operator itself (Kopf's managed mode).

The API server then refuses broken quotas and pods with the operator's message (naming the rule
that is broken, and only that one), and fills in the defaults of new quotas; the operator logs each
refusal once, at INFO, on one line (no ERROR, no traceback). The webhooks live only while the
test's operator runs: it removes them when it stops, and the fixture deletes the configurations
whatever happens, so that no other test of the session meets them. The refusal messages are
printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import harness
import pytest
from kubernetes_asyncio import client
from webhook_operator import (
    WebhookOperator,
    create_quota,
    refusal,
    registered_names,
    running,
    wait_serving,
)

from elasticquota.controller.webhooks.certs import self_signed_certificate
from elasticquota.core import keys
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION, patch_quota

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
async def webhooks(api: client.ApiClient) -> AsyncIterator[WebhookOperator]:
    operator = WebhookOperator()
    async with running(api, operator):
        yield operator


async def test_the_api_server_refuses_what_the_rules_refuse_and_fills_defaults(
    api: client.ApiClient, webhooks: WebhookOperator
) -> None:
    await wait_serving(api, webhooks)
    suffix = webhooks.configuration
    assert await webhooks.configurations(api) == registered_names(suffix)
    namespace = harness.unique("admit")
    await harness.ensure_namespace(api, namespace)
    dept, team, other = harness.unique("dept"), harness.unique("team"), harness.unique("other")
    tree = harness.unique("tree")

    # a broken quota is refused with the rule and the numbers
    broken = harness.quota_manifest(namespace, harness.unique("broken"), {"cpu": "5"}, {"cpu": "4"})
    message = await refusal(create_quota(api, broken))
    assert message == (
        f'admission webhook "validate-elasticquota.{suffix}" denied the request: '
        f"resourceKey cpu of quota {broken['metadata']['name']} min 5 > max 4"
    )

    # a parent, and at once a child: the child inherits the tree id and gets its shared weight
    parent = harness.quota_manifest(namespace, dept, {"cpu": "4"}, {"cpu": "8"}, is_parent=True)
    parent["metadata"]["labels"][keys.LABEL_TREE_ID] = tree
    await create_quota(api, parent)
    await create_quota(
        api, harness.quota_manifest(namespace, team, {"cpu": "3"}, {"cpu": "8"}, parent=dept)
    )
    child = await harness.get_quota(api, namespace, team)
    assert child["metadata"]["labels"][keys.LABEL_TREE_ID] == tree
    assert child["metadata"]["annotations"][keys.ANNO_SHARED_WEIGHT] == '{"cpu":"8"}'
    top = harness.quota_manifest(namespace, other, {}, {"cpu": "2", "memory": "4Gi"})
    await create_quota(api, top)
    created = await harness.get_quota(api, namespace, other)
    assert created["metadata"]["labels"][keys.LABEL_PARENT] == keys.ROOT_QUOTA
    assert created["metadata"]["annotations"][keys.ANNO_SHARED_WEIGHT] == (
        '{"cpu":"2","memory":"4Gi"}'
    )

    # the children's min must fit in the parent's
    greedy = harness.quota_manifest(
        namespace, harness.unique("greedy"), {"cpu": "2"}, {"cpu": "8"}, parent=dept
    )
    message = await refusal(create_quota(api, greedy))
    assert (
        f"checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: {dept} (sum of its "
        f"children's min with {greedy['metadata']['name']}: cpu 5; {dept}'s min: cpu 4)"
    ) in message
    orphan = harness.quota_manifest(
        namespace, harness.unique("orphan"), {}, {"cpu": "1"}, parent="no-such-dept"
    )
    assert "parent not exist" in await refusal(create_quota(api, orphan))

    # quota names are global: the same name in another namespace is refused, naming both
    elsewhere = harness.unique("elsewhere")
    await harness.ensure_namespace(api, elsewhere)
    squatter = harness.quota_manifest(elsewhere, other, {}, {"cpu": "2", "memory": "4Gi"})
    message = await refusal(create_quota(api, squatter))
    assert (
        f"AddQuota quota already exist:{other} (quota {other} in namespace {elsewhere}: a quota "
        f"{other} already exists in namespace {namespace}; quota names are unique across "
        "namespaces)"
    ) in message

    # the message names the real rule: a max of -1 only (not the shared weight copied from it);
    # a parent label that is no label value as such (not as a parent that does not exist)
    negative = harness.quota_manifest(namespace, harness.unique("negative"), {}, {"cpu": "-1"})
    assert await refusal(create_quota(api, negative)) == (
        f'admission webhook "validate-elasticquota.{suffix}" denied the request: '
        f"{negative['metadata']['name']} quota.Spec.Max's value < 0, in dimensions :[cpu] "
        "(cpu=-1)"
    )
    accented = harness.quota_manifest(
        namespace, harness.unique("accented"), {}, {"cpu": "1"}, parent="d\u00e9pt"
    )
    message = await refusal(create_quota(api, accented))
    assert (
        f"quota {accented['metadata']['name']}: label {keys.LABEL_PARENT} has an invalid value "
        "'d\u00e9pt': a valid label value is at most 63 characters"
    ) in message
    assert "parent not exist" not in message

    # each refusal is one INFO line of the operator's log naming the object and the rule; no
    # ERROR, no traceback (Kopf's echo of every refusal at ERROR is dropped)
    log = webhooks.process.log.read_text(errors="replace")
    refused = [line for line in log.splitlines() if " refused " in line]
    assert any(
        f" INFO elasticquota.controller.webhooks: refused CREATE ElasticQuota "
        f"{namespace}/{negative['metadata']['name']}: "
        in line
        and line.endswith("[negative-max]")
        for line in refused
    ), refused
    assert any(
        f"{namespace}/{accented['metadata']['name']} (defaults): " in line
        and line.endswith("[label-value]")
        for line in refused
    ), refused
    assert " ERROR " not in log and "failed permanently" not in log and "Traceback" not in log

    # no pods in a parent quota; the preemptible label never changes
    core = client.CoreV1Api(api)
    in_parent = harness.pod_manifest(
        namespace, "in-parent", "1", labels={keys.POD_LABEL_QUOTA: dept}
    )
    message = await refusal(core.create_namespaced_pod(namespace, in_parent))
    assert f"pod can not be linked to a parentQuotaGroup,quota:{dept}, pod:in-parent" in message
    labels = {keys.POD_LABEL_QUOTA: team, keys.POD_LABEL_PREEMPTIBLE: "true"}
    await core.create_namespaced_pod(
        namespace, harness.pod_manifest(namespace, "worker", "1", labels=labels)
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
        quota = await harness.get_quota(api, namespace, team)
        return keys.ANNO_RUNTIME in (quota["metadata"].get("annotations") or {})

    await harness.eventually(
        written, 30, webhooks.process, "the operator wrote the child's runtime"
    )

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
