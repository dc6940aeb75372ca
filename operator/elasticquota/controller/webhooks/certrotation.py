"""The webhook server's certificate when the operator keeps it itself, and the caBundle it patches.

As Kueue's internal certificate management (the cert-controller rotator of open-policy-agent):
with ``webhook_cert_secret`` set, the certificate lives in that Secret of the operator's namespace,
a CA of its own and a serving certificate it signs (``controller.webhooks.certs``), so that it works
wherever the chart is rendered without a cluster (``helm template``, Argo CD, Flux: no ``lookup``)
and with no cert-manager.

* Start-up (``prepare``): read the Secret; missing: make one and create it (of replicas starting
  together, the first create wins and the others read the winner's on their 409); unusable: replace
  it. The files the webhook server loads are written from it (one PEM with the certificate and its
  key, swapped in by rename so the server never reads half of a renewal; the CA apart).
* Every ``webhook_cert_check_interval`` (``run``): read it again. A planned renewal (expiring within
  ``webhook_cert_renew_before_days``, other names) is written by the active replica only (the
  Lease holder); an unusable one by any replica. Replacements are resourceVersion-checked: of two
  writers one wins, the other reads the winner's. A replica that finds a certificate other than the
  one it serves rewrites its files; the server serves them from its next check of their content
  on, without closing its port (``tlsfiles``).
* The caBundle: every webhook of ``webhook_ca_bundle_configuration`` (the chart's configurations,
  rendered with none) gets the CA (the managed one's, else ``webhook_ca_file``'s), checked each
  round, so a configuration re-applied by Helm or Argo CD gets it back within an interval.

A renewal of the serving certificate keeps the CA, so the caBundle does not change and a replica
still serving the previous certificate (until its next read) is trusted all along.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.webhooks.certs import (
    CA_CERT,
    CA_KEY,
    TLS_CERT,
    TLS_KEY,
    authority_usable,
    make_authority,
    make_serving,
    renewal_reason,
)
from elasticquota.kube.certificates import (
    CertificateSecret,
    StoredCertificate,
    WebhookConfigurations,
)
from elasticquota.kube.errors import describe
from elasticquota.settings import Settings

logger = logging.getLogger(__name__)

#: Seconds between two attempts at start-up while the Secret cannot be read or written.
START_RETRY = 2.0


def may_write(reason: str, leading: bool) -> bool:
    """Whether this replica replaces a certificate for ``reason`` (``certs.renewal_reason``): an
    unusable one, anyone; a planned renewal, only the active replica."""
    return leading or reason.startswith("unusable")


class WebhookCertificates:
    """The managed certificate (when ``webhook_cert_secret`` is set) and the caBundle patches."""

    def __init__(
        self,
        settings: Settings,
        api: client.ApiClient,
        leading: asyncio.Event,
        directory: Path | None = None,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        start_retry: float = START_RETRY,
    ) -> None:
        self.settings = settings
        self.leading = leading
        self.now = now
        self.start_retry = start_retry
        self.secret = (
            CertificateSecret(api, settings.effective_lease_namespace, settings.webhook_cert_secret)
            if settings.webhook_cert_secret
            else None
        )
        self.configurations = (
            WebhookConfigurations(api, settings.webhook_ca_bundle_configuration)
            if settings.webhook_ca_bundle_configuration
            else None
        )
        self.directory = directory or Path(tempfile.mkdtemp(prefix="webhook-tls-"))
        self.pem_file = self.directory / "tls.pem"
        self.ca_file = self.directory / CA_CERT
        #: What this replica serves (the Secret's data it last wrote to the files).
        self.serving: dict[str, bytes] | None = None

    @property
    def managed(self) -> bool:
        return self.secret is not None

    def server_settings(self) -> Settings:
        """The settings for the webhook server: the managed certificate's files (after
        ``prepare``), else the settings as they are."""
        if not self.managed:
            return self.settings
        path = str(self.pem_file)
        return self.settings.model_copy(
            update={
                "webhook_cert_file": path,
                "webhook_key_file": path,
                "webhook_ca_file": str(self.ca_file),
            }
        )

    def _renewal_window(self) -> datetime.timedelta:
        return datetime.timedelta(days=self.settings.webhook_cert_renew_before_days)

    def _renewed(self, data: dict[str, bytes] | None) -> dict[str, bytes]:
        """New data: the stored CA kept unless it is missing, unusable or expiring."""
        now = self.now()
        settings = self.settings
        keep_ca = data is not None and authority_usable(data, self._renewal_window(), now)
        authority = (
            {key: data[key] for key in (CA_CERT, CA_KEY)}
            if keep_ca and data is not None
            else make_authority(
                f"{settings.webhook_cert_secret}-ca", settings.webhook_ca_validity_days, now
            )
        )
        serving = make_serving(
            authority,
            settings.effective_webhook_cert_dns_names,
            settings.webhook_cert_validity_days,
            now,
        )
        return {**serving, **authority}

    async def sync(self) -> dict[str, bytes] | None:
        """One look at the Secret: create or renew it where due and allowed; the certificate to
        serve (None when there is none yet: another replica is to renew an unusable one)."""
        assert self.secret is not None
        stored = await self.secret.read()
        if stored is None:
            data = self._renewed(None)
            try:
                await self.secret.create(data)
                logger.info(
                    "webhook certificate: created Secret %s/%s (CA and serving certificate for %s)",
                    self.secret.namespace,
                    self.secret.name,
                    ", ".join(self.settings.effective_webhook_cert_dns_names),
                )
                return data
            except ApiException as error:
                if error.status != 409:
                    raise
                stored = await self.secret.read()  # another replica was first: use its
                if stored is None:
                    return None
        return await self._renew_if_due(stored)

    async def _renew_if_due(self, stored: StoredCertificate) -> dict[str, bytes] | None:
        assert self.secret is not None
        reason = renewal_reason(
            stored.data,
            self.settings.effective_webhook_cert_dns_names,
            self._renewal_window(),
            self.now(),
        )
        if reason is None:
            return stored.data
        if not may_write(reason, self.leading.is_set()):
            logger.debug("webhook certificate: %s; the active replica renews it", reason)
            return None if reason.startswith("unusable") else stored.data
        data = self._renewed(stored.data)
        try:
            await self.secret.replace(data, stored.resource_version)
        except ApiException as error:
            if error.status != 409:
                raise
            logger.info("webhook certificate: another replica renewed it first")
            again = await self.secret.read()
            return again.data if again is not None else None
        logger.info(
            "webhook certificate: renewed Secret %s/%s (%s)",
            self.secret.namespace,
            self.secret.name,
            reason,
        )
        return data

    def _write_files(self, data: dict[str, bytes]) -> None:
        """The server's files: certificate + key in one PEM, renamed into place at once."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path, content in (
            (self.ca_file, data[CA_CERT]),
            (self.pem_file, data[TLS_CERT] + data[TLS_KEY]),
        ):
            temporary = path.with_suffix(".new")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(content)
            temporary.replace(path)
        self.serving = data

    def ca_bundle(self) -> str | None:
        """The base64 PEM the webhook configurations must carry (None: nothing known yet)."""
        if self.managed:
            return base64.b64encode(self.serving[CA_CERT]).decode() if self.serving else None
        if self.settings.webhook_ca_file:
            return base64.b64encode(Path(self.settings.webhook_ca_file).read_bytes()).decode()
        return None

    async def round(self) -> None:
        """One check: the Secret (when managed), the files, the caBundle."""
        if self.managed:
            data = await self.sync()
            if data is not None and data != self.serving:
                self._write_files(data)
        bundle = self.ca_bundle()
        if self.configurations is not None and bundle is not None:
            changed = await self.configurations.set_ca_bundle(bundle)
            if changed:
                logger.info(
                    "webhook certificate: caBundle of %s %s set",
                    " and ".join(changed),
                    self.configurations.name,
                )

    async def prepare(self, stop: asyncio.Event | None = None) -> None:
        """Until the server has a certificate to load (managed: the Secret read or made and the
        files written), retrying every ``start_retry`` seconds; a no-op when not managed."""
        while self.managed and self.serving is None:
            try:
                async with asyncio.timeout(self.settings.api_timeout * 3):
                    data = await self.sync()
                if data is not None:
                    self._write_files(data)
                    return
            except Exception as error:  # a refusal (403), a broken connection, a bad Secret
                logger.warning(
                    "webhook certificate: Secret %s not ready: %s",
                    self.settings.webhook_cert_secret,
                    describe(error),
                )
            if stop is not None and stop.is_set():
                return
            await asyncio.sleep(self.start_retry)

    async def run(self) -> None:
        """A round now, then every ``webhook_cert_check_interval`` seconds; failures are logged
        and the next round tries again."""
        while True:
            try:
                async with asyncio.timeout(self.settings.api_timeout * 3):
                    await self.round()
            except Exception as error:  # never the operator's end: the next round tries again
                logger.warning("webhook certificate: %s (tried again later)", describe(error))
            await asyncio.sleep(self.settings.webhook_cert_check_interval)
