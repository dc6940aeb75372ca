"""The webhook certificate's Secret and the caBundle of the webhook configurations.

The operator-managed certificate (``controller.webhooks.certrotation``) lives in one Secret of the
operator's namespace, read, created and replaced here; replacements carry the resourceVersion that
was read, so of two replicas replacing it at once one wins and the other gets a 409 and reads the
winner's. The caBundle of a Validating/MutatingWebhookConfiguration pair (the chart's, which it
renders with no caBundle) is set with a JSON patch that tests each webhook's name at its index, so
a configuration changed meanwhile is refused (422) rather than patched at the wrong place.
Every call is bounded by the client's request timeout.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

#: The Secret's type: a kubernetes.io/tls Secret would require exactly tls.crt and tls.key to be
#: the serving pair, which they are; ca.crt and ca.key come along.
SECRET_TYPE = "kubernetes.io/tls"


@dataclass(frozen=True)
class StoredCertificate:
    """The Secret's data (decoded) and the resourceVersion it was read at."""

    data: dict[str, bytes]
    resource_version: str


class CertificateSecret:
    """One Secret (``namespace``/``name``) holding the webhook certificate."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.name = name

    async def read(self) -> StoredCertificate | None:
        """The stored certificate, None when the Secret does not exist."""
        try:
            secret = await self.core.read_namespaced_secret(self.name, self.namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        data = {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}
        return StoredCertificate(data, secret.metadata.resource_version)

    def _body(self, data: dict[str, bytes], resource_version: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/managed-by": "elastic-quota-operator"},
        }
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": SECRET_TYPE,
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        }

    async def create(self, data: dict[str, bytes]) -> None:
        """Create it (409 when another replica was first)."""
        await self.core.create_namespaced_secret(self.namespace, self._body(data, None))

    async def replace(self, data: dict[str, bytes], resource_version: str) -> None:
        """Replace what was read at ``resource_version`` (409 when it changed since)."""
        body = self._body(data, resource_version)
        await self.core.replace_namespaced_secret(self.name, self.namespace, body)


def bundle_patch(webhooks: list[dict[str, Any]], ca_bundle: str) -> list[dict[str, Any]]:
    """The JSON patch giving every webhook ``ca_bundle`` (base64 PEM); empty when all have it."""
    patch: list[dict[str, Any]] = []
    for index, webhook in enumerate(webhooks):
        if (webhook.get("clientConfig") or {}).get("caBundle") == ca_bundle:
            continue
        patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook["name"]})
        patch.append(
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": ca_bundle}
        )
    return patch


class WebhookConfigurations:
    """The Validating and the Mutating webhook configuration of one name."""

    def __init__(self, api: client.ApiClient, name: str) -> None:
        self.api = api
        self.admission = client.AdmissionregistrationV1Api(api)
        self.name = name

    async def set_ca_bundle(self, ca_bundle: str) -> list[str]:
        """Give every webhook of both configurations ``ca_bundle``; the kinds that changed. A
        configuration that does not exist (404) is skipped: the chart may not render it."""
        changed = []
        for kind, read, patch in (
            (
                "ValidatingWebhookConfiguration",
                self.admission.read_validating_webhook_configuration,
                self.admission.patch_validating_webhook_configuration,
            ),
            (
                "MutatingWebhookConfiguration",
                self.admission.read_mutating_webhook_configuration,
                self.admission.patch_mutating_webhook_configuration,
            ),
        ):
            try:
                configuration = await read(self.name)
            except ApiException as error:
                if error.status == 404:
                    continue
                raise
            webhooks = self.api.sanitize_for_serialization(configuration).get("webhooks") or []
            operations = bundle_patch(webhooks, ca_bundle)
            if operations:
                await patch(self.name, operations)
                changed.append(kind)
        return changed
