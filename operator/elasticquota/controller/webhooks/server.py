"""The webhooks' HTTPS server and the configurations Kopf manages for them.

When ``webhook_configuration`` is set, Kopf creates the webhook configurations and keeps their URL
and CA bundle current; a replica that stops cleanly removes its webhooks again (Kopf's
non-persistent webhooks), one that crashes leaves them to the failure policy. The pod webhooks get
a ``namespaceSelector`` on the ``kubernetes.io/metadata.name`` label (``pod_namespace_selector``),
which API servers set on every namespace since 1.21 (on older ones a namespace without it is
matched: label it yourself).
"""

from __future__ import annotations

import base64
import functools
import ssl
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from typing import Any, cast

import aiohttp.web
import kopf
from kopf import WebhookClientConfig, WebhookFn
from kopf._core.engines import admission as kopf_admission
from kopf._core.reactor.inventory import ResourceMemories, ResourceMemory

from elasticquota.controller.webhooks.certs import self_signed_certificate
from elasticquota.controller.webhooks.identity import WORKLOAD_RESOURCES
from elasticquota.controller.webhooks.namespaces import pod_webhook_excluded_namespaces
from elasticquota.controller.webhooks.tlsfiles import ServedCertificate
from elasticquota.settings import ListenError, Settings, is_bind_error

#: The label API servers put on every namespace since 1.21, its value the namespace's name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


#: Seconds between two checks of the certificate files' content: renewed files (cert-manager's,
#: the operator's own from its Secret) are served within this long (a few small files hashed).
FILE_CHECK_INTERVAL = 1.0

#: The settings of the webhooks' listening socket, named when it cannot listen.
LISTEN_SETTINGS = ("webhook_port", "webhook_address")


class AdmissionMemories(ResourceMemories):
    """Kopf's per-object memories as the webhooks use them: none is kept.

    Kopf keeps one for every object an UPDATE or DELETE review names (by uid), to be forgotten
    when a watch of Kopf's sees the object deleted; the operator has no such watch and no use
    for the memo, so each pod or workload ever updated (every gated pod, when its gate is removed)
    would stay in memory for the process's lifetime."""

    async def recall(
        self,
        raw_body: Any,
        *,
        memobase: Any = None,
        noticed_by_listing: bool = False,
        ephemeral: bool = False,
    ) -> ResourceMemory:
        return await super().recall(
            raw_body, memobase=memobase, noticed_by_listing=noticed_by_listing, ephemeral=True
        )


def without_memories(fn: WebhookFn) -> WebhookFn:
    """Kopf's admission function (its ``serve_admission_request`` with what it needs bound) with
    ``AdmissionMemories``; any other function as it is."""
    if isinstance(fn, functools.partial) and "memories" in fn.keywords:
        return cast(WebhookFn, functools.partial(fn, memories=AdmissionMemories()))
    return fn


def review_problem(review: Any) -> str | None:
    """What makes ``review`` no AdmissionReview Kopf and the handlers can read, if anything."""
    request = review.get("request") if isinstance(review, Mapping) else None
    if not isinstance(request, Mapping):
        return "not an AdmissionReview: no request object"
    resource = request.get("resource")
    if not isinstance(resource, Mapping) or not all(
        isinstance(resource.get(key), str) for key in ("group", "version", "resource")
    ):
        return "the admission request has no resource (group, version, resource)"
    if not isinstance(request.get("userInfo", {}), Mapping):
        return "the admission request's userInfo is not an object"
    for key in ("object", "oldObject"):
        body = request.get(key)
        if body is not None and not (
            isinstance(body, Mapping) and isinstance(body.get("metadata", {}), Mapping)
        ):
            return f"the admission request's {key} is not an object with a metadata object"
    return None


def checking_reviews(fn: WebhookFn) -> WebhookFn:
    """``fn`` answering a malformed review with HTTP 400 and the reason (Kopf's answer to a
    review without userInfo or object), not a 500 and a traceback."""

    async def serve(request: Any, **details: Any) -> Any:
        problem = review_problem(request)
        if problem is not None:
            raise kopf_admission.MissingDataError(problem)
        return await fn(request, **details)

    return cast(WebhookFn, serve)


class WebhookServer(kopf.WebhookServer):
    """Kopf's HTTPS server, making its self-signed certificate with ``cryptography`` and keeping
    no memory per object (``without_memories``), answering a malformed review with 400
    (``checking_reviews``); a port it cannot listen on is a ``ListenError``
    naming the settings (Kopf re-raises a failed server's error as the operator's own: ``run``
    then says which setting to change). Its serving loop is its own: renewed certificate files
    are served without closing the port (Kopf's restarts the server)."""

    @staticmethod
    def build_certificate(
        hostnames: Collection[str], password: str | None = None
    ) -> tuple[bytes, bytes]:
        return self_signed_certificate(hostnames, password)

    async def __call__(self, fn: WebhookFn) -> AsyncIterator[WebhookClientConfig]:
        """Listen once and yield the webhooks' client configuration; again, on the same port,
        each time renewed certificate files are served (``tlsfiles``: never a closed port)."""
        handler = checking_reviews(without_memories(fn))

        async def serve(request: aiohttp.web.Request) -> aiohttp.web.Response:
            return await self._serve(handler, request)

        certificate = ServedCertificate(self._build_ssl, self._certificate_files())
        app = aiohttp.web.Application()
        app.add_routes([aiohttp.web.post(f"{(self.path or '').rstrip('/')}/{{id:.*}}", serve)])
        runner = aiohttp.web.AppRunner(app, handle_signals=False)
        await runner.setup()
        try:
            port = await self._listen(runner, certificate.listening)
            while True:
                yield self._client_config(certificate, port)
                await certificate.renewed(self.file_check_interval)
        finally:
            await runner.cleanup()  # on any exit: the port is free at once

    def _certificate_files(self) -> list[str]:
        """The files whose change renews the served certificate (none: made in memory)."""
        if self.certfile is None or self.pkeyfile is None:
            return []
        paths = [self.certfile, self.pkeyfile, self.cafile]
        return [str(path) for path in dict.fromkeys(paths) if path is not None]

    async def _listen(self, runner: aiohttp.web.AppRunner, context: ssl.SSLContext | None) -> int:
        """The port listened on (Kopf's reuse options); a bind refused is a ``ListenError``."""
        port = self.port or self._allocate_free_port()
        site = aiohttp.web.TCPSite(
            runner, self.addr or None, port, ssl_context=context,
            reuse_port=True, reuse_address=True,
        )  # fmt: skip
        try:
            await site.start()
        except OSError as error:
            if not is_bind_error(error):
                raise
            address = self.addr or "0.0.0.0"  # every interface without one
            raise ListenError(LISTEN_SETTINGS, address, port, error) from error
        return port

    def _client_config(self, certificate: ServedCertificate, port: int) -> WebhookClientConfig:
        """The URL the API server calls (Kopf's rules for the host) and the CA bundle."""
        schema = "http" if certificate.listening is None else "https"
        host = self.host or self.DEFAULT_HOST or self._get_accessible_addr(self.addr)
        config = WebhookClientConfig(url=self._build_url(schema, host, port, self.path or ""))
        if certificate.cadata is not None:
            config["caBundle"] = base64.b64encode(certificate.cadata).decode("ascii")
        return config


def webhook_server(settings: Settings) -> kopf.WebhookServer:
    """The webhook server the settings describe: a provided certificate, else a self-signed one
    for the advertised host and the listen address."""
    return WebhookServer(
        addr=settings.webhook_address,
        port=settings.webhook_port,
        host=settings.webhook_host,
        certfile=settings.webhook_cert_file,
        pkeyfile=settings.webhook_key_file,
        cafile=settings.webhook_ca_file,
        file_check_interval=FILE_CHECK_INTERVAL,
    )


def configure_admission(tuned: kopf.OperatorSettings, settings: Settings) -> None:
    """Serve the webhooks, and manage their configurations unless someone else does (then with
    the pod webhooks' namespaceSelector)."""
    tuned.admission.server = webhook_server(settings)
    tuned.admission.managed = settings.webhook_configuration or None
    if settings.webhook_configuration:
        _POD_EXCLUSIONS[settings.webhook_configuration] = pod_webhook_excluded_namespaces(settings)
        kopf_admission.build_webhooks = build_webhooks_excluding_namespaces


def pod_namespace_selector(excluded: Iterable[str]) -> dict[str, Any]:
    """The pod webhooks' ``namespaceSelector``: every namespace but ``excluded``, by name label.

    API servers label every namespace with its name since 1.21; a namespace without the label
    (older servers) is matched, so the exclusion then needs the label set by hand."""
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": sorted(excluded)}
        ]
    }


def matches_pods(webhook: Mapping[str, Any]) -> bool:
    """Whether a webhook of a configuration is called for pods (or a subresource of pods), or
    for the workloads that make them (``controller.webhooks.identity``)."""
    kinds = {("", "pods"), *WORKLOAD_RESOURCES}
    return any(
        (group, str(resource).split("/")[0]) in kinds
        for rule in webhook.get("rules") or []
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
    )


#: Kopf's own builder of the managed configurations' webhooks.
_KOPF_BUILD_WEBHOOKS = kopf_admission.build_webhooks
#: The pod webhooks' excluded namespaces, by managed configuration (Kopf's name suffix).
_POD_EXCLUSIONS: dict[str, tuple[str, ...]] = {}


def build_webhooks_excluding_namespaces(
    handlers_: Iterable[Any],
    *,
    resources: Iterable[Any],
    name_suffix: str,
    client_config: Any,
    persistent_only: bool = False,
) -> list[dict[str, Any]]:
    """Kopf's webhooks of a managed configuration, each pod webhook with the namespaceSelector.

    Kopf builds the configurations it manages with ``build_webhooks`` (every time the URL or CA
    bundle changes) and has no option for a namespaceSelector, so this replaces that function in
    Kopf's admission engine (``configure_admission``);
    tests/integration/test_admission_webhooks_crashed.py reads the selector back from the API
    server, so a Kopf that stopped calling it is noticed."""
    webhooks = _KOPF_BUILD_WEBHOOKS(
        handlers_,
        resources=resources,
        name_suffix=name_suffix,
        client_config=client_config,
        persistent_only=persistent_only,
    )
    excluded = _POD_EXCLUSIONS.get(name_suffix)
    if excluded:
        for webhook in webhooks:
            if matches_pods(webhook):
                webhook["namespaceSelector"] = pod_namespace_selector(excluded)
    return webhooks
