"""An operator process serving the admission webhooks on loopback, for the integration tests that
go through the real API server's admission (``test_admission_webhooks_*.py``, ``test_identity.py``,
``test_user_limit_refusal.py``): it manages its webhook configurations itself (Kopf's managed
mode) and removes them when it stops; :func:`running` deletes them whatever happens, so that no
other test of the session meets them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import harness
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.webhooks.identity import workload_webhooks
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION


class WebhookOperator:
    """An operator process serving the webhooks on loopback, and its configurations' name."""

    def __init__(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.configuration = f"{harness.unique('eq')}.elasticquota.dev"
        self.process = harness.OperatorProcess(
            harness.unique("webhooks"),
            "--webhook-address", "127.0.0.1",
            "--webhook-configuration", self.configuration,
            *extra,
            env=env,
            webhooks=True,
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


async def crashed_with_configurations(api: client.ApiClient, operator: WebhookOperator) -> None:
    """Serving, then SIGKILLed: nothing answers, the configurations stay registered."""
    await wait_serving(api, operator)
    operator.process.kill()
    suffix = operator.configuration
    assert await operator.configurations(api) == registered_names(suffix)
