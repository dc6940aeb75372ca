"""The webhook settings: the admission webhook server, its configurations and its certificate.

The HTTPS server of the quota and pod webhooks (off while ``webhook_port`` is 0), the URL the API
server reaches it at, what the API server does when it cannot (the failure policies), the webhook
configurations the operator keeps current, and the serving certificate: given as files, made in
memory, or kept by the operator itself in a Secret and renewed
(``controller.webhooks.certrotation``). The rules between the certificate settings are checked
here.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator

from elasticquota.settings.values import (
    DNS_SUBDOMAIN_OR_EMPTY,
    DOTTED_SUBDOMAIN_OR_EMPTY,
    HOUR,
    MAX_NAME,
    FilePath,
    HostName,
    Port,
)


class WebhookSettings(BaseModel):
    """The admission webhooks and their serving certificate."""

    webhook_port: Port = 0
    """Port of the HTTPS admission webhook server; 0 (the default) disables the webhooks."""

    webhook_address: HostName = "0.0.0.0"
    """Address the webhook server listens on."""

    webhook_host: HostName | None = None
    """Host name or IP the API server reaches the webhooks at (the URL in the webhook
    configurations, and a name of the self-signed certificate); unset: the listen address
    (127.0.0.1 for 0.0.0.0). In a cluster: the webhook Service's DNS name."""

    webhook_failure_policy: Literal["Fail", "Ignore"] = "Fail"
    """What the API server does with an ElasticQuota write when the quota webhooks cannot be
    reached: refuse it (Fail, as the reference) or let it through unchecked (Ignore). The pod
    webhooks have their own, ``pod_webhook_failure_policy``."""

    pod_webhook_failure_policy: Literal["Fail", "Ignore"] = "Ignore"
    """The same for pod creates and updates (``validate-pod``, ``mutate-pod``): Ignore by default,
    so that an operator that is down, starting or unreachable never blocks the cluster's pods
    (revocation still limits what got in unchecked); Fail refuses them meanwhile."""

    webhook_configuration: str = Field(
        default="elastic-quota-operator.elasticquota.dev",
        max_length=MAX_NAME,
        pattern=DOTTED_SUBDOMAIN_OR_EMPTY,
    )
    """Name of the Validating/MutatingWebhookConfiguration the operator creates and keeps
    current (its webhooks are named ``<handler>.<name>``, so the name needs a dot); empty: the
    configurations are managed by someone else (e.g. a Helm chart)."""

    webhook_cert_file: FilePath | None = None
    """PEM serving certificate of the webhook server; unset: a self-signed one is made at
    start-up (with ``webhook_key_file``: both or neither)."""

    webhook_key_file: FilePath | None = None
    """PEM private key of ``webhook_cert_file``."""

    webhook_ca_file: FilePath | None = None
    """PEM CA bundle the API server verifies the certificate with (``caBundle``); unset: the
    certificate itself (right for a self-signed one)."""

    webhook_cert_secret: str = Field(
        default="", max_length=MAX_NAME, pattern=DNS_SUBDOMAIN_OR_EMPTY
    )
    """Name of a Secret in the Lease's namespace where the operator keeps the webhook server's
    certificate itself (``controller.webhooks.certrotation``): a CA of its own and a serving
    certificate for ``webhook_cert_dns_names`` signed by it. The first replica to find it missing
    creates it, every replica serves what it holds, the active replica renews it before it
    expires (a replica replaces one that is unusable at once); empty (the default): not managed, the
    certificate comes from ``webhook_cert_file`` or is made in memory. Excludes
    ``webhook_cert_file``."""

    webhook_cert_dns_names: list[HostName] = Field(default_factory=list)
    """DNS names of the managed certificate (``webhook_cert_secret``): the webhook Service's
    names; empty: ``webhook_host``, else ``localhost``."""

    webhook_cert_validity_days: int = Field(default=365, ge=2, le=3650)
    """Days a managed serving certificate is valid."""

    webhook_cert_renew_before_days: int = Field(default=30, ge=1, le=3649)
    """Days before its end (or its CA's) a managed certificate is renewed; below
    ``webhook_cert_validity_days``."""

    webhook_ca_validity_days: int = Field(default=3650, ge=2, le=36500)
    """Days the managed certificate's CA is valid: the caBundle changes only when it is renewed."""

    webhook_cert_check_interval: float = Field(default=60.0, ge=1, le=HOUR)
    """Seconds between two reads of the managed certificate's Secret (renewals, a replica
    picking up another's renewal) and of the caBundle of ``webhook_ca_bundle_configuration``.
    (The server checks its certificate files every second, whatever this says.)"""

    webhook_ca_bundle_configuration: str = Field(
        default="", max_length=MAX_NAME, pattern=DNS_SUBDOMAIN_OR_EMPTY
    )
    """Name of the Validating/MutatingWebhookConfiguration (someone else's, e.g. the chart's)
    whose webhooks' caBundle the operator keeps equal to its certificate's CA (the managed one's,
    else ``webhook_ca_file``'s); empty: none (the owner of the configurations sets it)."""

    @property
    def webhook_enabled(self) -> bool:
        """Admission webhooks are served when a webhook port is set."""
        return self.webhook_port > 0

    @property
    def effective_webhook_cert_dns_names(self) -> list[str]:
        """The managed certificate's names: ``webhook_cert_dns_names``, else ``webhook_host``."""
        return list(self.webhook_cert_dns_names) or [self.webhook_host or "localhost"]

    @model_validator(mode="after")
    def _cert_and_key_together(self) -> Self:
        if (self.webhook_cert_file is None) != (self.webhook_key_file is None):
            raise ValueError(
                "webhook_cert_file and webhook_key_file go together: set both or neither"
            )
        return self

    @model_validator(mode="after")
    def _one_certificate_source(self) -> Self:
        if self.webhook_cert_secret and self.webhook_cert_file is not None:
            raise ValueError(
                "webhook_cert_secret and webhook_cert_file exclude each other: the certificate is "
                "either the operator's own (in the Secret) or given as files"
            )
        if self.webhook_cert_renew_before_days >= min(
            self.webhook_cert_validity_days, self.webhook_ca_validity_days
        ):
            raise ValueError(
                f"webhook_cert_renew_before_days ({self.webhook_cert_renew_before_days}) must be "
                f"below webhook_cert_validity_days ({self.webhook_cert_validity_days}) and "
                f"webhook_ca_validity_days ({self.webhook_ca_validity_days})"
            )
        return self
