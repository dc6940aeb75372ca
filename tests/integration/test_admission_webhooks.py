"""Admission webhooks through the real API server: the operator serves them over HTTPS with its
self-signed certificate and manages the webhook configurations itself (Kopf's managed mode).

The API server then refuses broken quotas and pods with the operator's message (naming the rule
that is broken, and only that one), and fills in the defaults of new quotas; the operator logs each
refusal once, at INFO, on one line (no ERROR, no traceback). The webhooks live only while the
test's operator runs: it removes them when it stops, and the fixture deletes the configurations
whatever happens, so that no other test of the session meets them. The refusal messages are
printed (``pytest -s`` shows them).

An operator that crashed leaves its configurations registered: then the API server admits pods
(pod webhooks fail open by default) and refuses quota writes (quota webhooks fail closed); with
the pod webhooks set to Fail, pods of kube-system and of the operator's own namespace are still
admitted (namespaceSelector).
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import harness
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from ports import free_port

from elasticquota.controller.webhooks.certs import self_signed_certificate
from elasticquota.controller.webhooks.identity import workload_webhooks
from elasticquota.core import keys
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION, patch_quota

pytestmark = pytest.mark.timeout(300)


class WebhookOperator:
    """An operator process serving the webhooks on loopback, and its configurations' name."""

    def __init__(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.configuration = f"{harness.unique('eq')}.elasticquota.dev"
        self.process = harness.OperatorProcess(
            harness.unique("webhooks"),
            "--webhook-port", str(free_port()),
            "--webhook-address", "127.0.0.1",
            "--webhook-configuration", self.configuration,
            *extra,
            env=env,
        )  # fmt: skip

    async def registered(self, api: client.ApiClient) -> dict[str, Any]:
        """Every registered webhook by name (validating and mutating), as the server holds it."""
        registration = client.AdmissionregistrationV1Api(api)
        found: dict[str, Any] = {}
        for read in (
            registration.read_validating_webhook_configuration,
            registration.read_mutating_webhook_configuration,
        ):
            configuration = await read(self.configuration)
            found.update({hook.name: hook for hook in configuration.webhooks or []})
        return found

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


def registered_names(suffix: str) -> list[list[str]]:
    """The webhook names of the validating and the mutating configuration the operator manages: the
    quota and pod webhooks, and the workloads' identity webhooks (controller.webhooks.identity)."""
    workloads = [f"{webhook}.{suffix}" for _, webhook, _ in workload_webhooks()]
    return [
        [f"validate-elasticquota.{suffix}", f"validate-pod.{suffix}"],
        sorted([f"mutate-elasticquota.{suffix}", f"mutate-pod.{suffix}", *workloads]),
    ]


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
    probe = harness.quota_manifest("default", harness.unique("probe"), {"cpu": "2"}, {"cpu": "1"})

    async def refused() -> bool:
        try:
            await create_quota(api, probe, dry_run="All")
        except ApiException as error:
            return "min 2 > max 1" in json.loads(error.body)["message"]
        return False

    await harness.eventually(refused, 60, webhooks.process, "the webhooks answer the API server")


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


# -- a crashed operator: its configurations stay, the failure policies decide ----------------------


async def labelled_with_its_name(api: client.ApiClient, namespace: str) -> None:
    """The ``kubernetes.io/metadata.name`` label the pod webhooks' namespaceSelector reads: API
    servers set it since 1.21; on older ones (this suite's) the docs tell users to set it."""
    await harness.ensure_namespace(api, namespace)
    label = {"metadata": {"labels": {"kubernetes.io/metadata.name": namespace}}}
    await client.CoreV1Api(api).patch_namespace(namespace, label)


async def crashed_with_configurations(api: client.ApiClient, operator: WebhookOperator) -> None:
    """Serving, then SIGKILLed: nothing answers, the configurations stay registered."""
    await wait_serving(api, operator)
    operator.process.kill()
    suffix = operator.configuration
    assert await operator.configurations(api) == registered_names(suffix)


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
