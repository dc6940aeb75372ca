"""The webhooks' HTTPS server and the configurations Kopf manages for them.

The server is the operator's own, on aiohttp, implementing Kopf's public protocol for an admission
server: assigned to ``settings.admission.server``, called with Kopf's admission function, it yields
the webhooks' client configuration (URL and CA bundle), again each time renewed certificate files
are served. The reviews of the operator's own handlers it answers itself (``direct``); Kopf's
function answers any other. What it still needs of Kopf's private modules is in ``kopfhooks``.

When ``webhook_configuration`` is set, Kopf creates the webhook configurations and keeps their URL
and CA bundle current; a replica that stops cleanly removes its webhooks again (Kopf's
non-persistent webhooks), one that crashes leaves them to the failure policy. The pod webhooks get
a ``namespaceSelector`` on the ``kubernetes.io/metadata.name`` label (``pod_namespace_selector``),
which API servers set on every namespace since 1.21 (on older ones a namespace without it is
matched: label it yourself). The quota webhook gets ``matchConditions`` (``conditions``): API
servers with them (1.28+) skip it for the updates it allows at once, the operator's own writes of
its figures among them; older ones drop the field they do not know, and call it as before.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import ipaddress
import json
import socket
import ssl
import tempfile
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Self

import aiohttp.web
import kopf
from kopf import WebhookClientConfig, WebhookFn

from elasticquota.controller.webhooks import kopfhooks
from elasticquota.controller.webhooks.admission import VALIDATE_QUOTA
from elasticquota.controller.webhooks.certs import self_signed_certificate
from elasticquota.controller.webhooks.conditions import quota_match_conditions, unchanged_update
from elasticquota.controller.webhooks.direct import Direct, ReviewDataError, direct_answers
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

#: The answers to a review that cannot be served, by status (Kopf's errors: ``kopfhooks``).
HTTP_ERRORS: dict[int, type[aiohttp.web.HTTPException]] = {
    400: aiohttp.web.HTTPBadRequest,
    404: aiohttp.web.HTTPNotFound,
    409: aiohttp.web.HTTPConflict,
}

Handler = Callable[[aiohttp.web.Request], Awaitable[aiohttp.web.Response]]
#: Whether a review for webhook ``id`` is answered "allowed" at once, without Kopf.
Spared = Callable[[str | None, Mapping[str, Any]], bool]


def spared_quota_update(webhook: str | None, review: Mapping[str, Any]) -> bool:
    """The reviews API servers with the quota webhook's ``matchConditions`` (1.28+) do not send:
    an UPDATE that changes nothing the quota rules read (``conditions.unchanged_update``)."""
    return webhook == VALIDATE_QUOTA and unchanged_update(review)


def allowed(review: Mapping[str, Any]) -> dict[str, Any]:
    """The answer "allowed" to ``review``, as Kopf builds it (its API version and kind)."""
    request = review.get("request") or {}
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": review.get("kind", "AdmissionReview"),
        "response": {"uid": request.get("uid", ""), "allowed": True},
    }


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


def answering(
    fn: WebhookFn,
    errors: Iterable[tuple[type[Exception], int]],
    spared: Spared | None = None,
    direct: Direct | None = None,
) -> Handler:
    """The handler of ``POST {path}/{id}``: the review's JSON to ``fn`` for webhook ``id``, with
    the request's headers and the client's certificate, and its answer as JSON. A body that is
    not JSON or no AdmissionReview (``review_problem``) is a 400 with the reason, not a 500 and a
    traceback; Kopf's errors of a review it cannot serve get their statuses (``errors``). A
    review ``spared`` picks is allowed at once, without ``fn``; one ``direct`` has a handler for
    is answered by it (``direct``: Kopf's handler machinery left out), a review it cannot serve
    a 400 as well."""
    statuses = ((ReviewDataError, 400), *errors)

    async def answer(request: aiohttp.web.Request) -> aiohttp.web.Response:
        try:
            review = json.loads(await request.text())
        except ValueError as error:  # not JSON, or not UTF-8
            raise aiohttp.web.HTTPBadRequest(reason=str(error) or None) from error
        problem = review_problem(review)
        if problem is not None:
            raise aiohttp.web.HTTPBadRequest(reason=problem)
        webhook = request.match_info.get("id")
        if spared is not None and spared(webhook, review):
            return aiohttp.web.json_response(allowed(review))
        handler = direct(webhook, review) if direct is not None else None
        transport = request.transport
        try:
            if handler is not None:
                response: Mapping[str, Any] = await handler(review)
            else:
                response = await fn(
                    review,
                    webhook=webhook,
                    headers=dict(request.headers),
                    sslpeer=transport.get_extra_info("peercert") if transport else None,
                )
        except Exception as error:
            status = next((status for kind, status in statuses if isinstance(error, kind)), None)
            if status is None:
                raise
            raise HTTP_ERRORS[status](reason=str(error) or None) from error
        return aiohttp.web.json_response(response)

    return answer


def accessible_host(addr: str | None) -> str:
    """Where a client reaches a server listening on ``addr``: loopback for every interface (none,
    or a catch-all address: 0.0.0.0, ::), else ``addr`` itself."""
    if addr is None:
        return "localhost"
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return addr  # a host name
    if ip.is_unspecified:
        return "127.0.0.1" if ip.version == 4 else "::1"
    return addr


def webhook_url(host: str, port: int, path: str) -> str:
    """The HTTPS URL of ``path`` on ``host:port``: an IPv6 address in brackets, port 443 left out
    (HTTPS's own)."""
    with contextlib.suppress(ValueError):
        host = f"[{ipaddress.IPv6Address(host)}]"
    netloc = host if port == 443 else f"{host}:{port}"
    return urllib.parse.urlunsplit(("https", netloc, path, "", ""))


def free_port() -> int:
    """A port nothing listens on (the kernel's choice, released at once): the same one for every
    interface a server listening on all of them binds."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclasses.dataclass(kw_only=True, eq=False)
class WebhookServer:
    """The webhooks' HTTPS server: Kopf's admission server protocol (``__call__``), an async
    context manager whose exit closes what it serves (Kopf serves inside ``async with``: the
    port is free at once).

    ``addr``/``port``: where it listens (None: every interface, a free port); ``host``: the host
    of the webhooks' URL (else ``addr``'s, loopback for a catch-all one); ``path``: the URL's root
    path. ``certfile``/``pkeyfile`` (may be one file)/``cafile``: the served certificate, the
    bundle the API server checks it against (else the certificate itself); without them a
    self-signed certificate for the host and the address, made in memory. Files are checked every
    ``file_check_interval`` seconds and renewed ones served without closing the port. A port it
    cannot listen on is a ``ListenError`` naming the settings (Kopf re-raises a failed server's
    error as the operator's own: ``run`` then says which setting to change)."""

    addr: str | None = None
    port: int | None = None
    host: str | None = None
    path: str = ""
    certfile: str | None = None
    pkeyfile: str | None = None
    cafile: str | None = None
    file_check_interval: float = FILE_CHECK_INTERVAL
    #: Reviews answered "allowed" without Kopf (``answering``).
    spared: Spared | None = None
    #: What ``__call__`` started and ``__aexit__`` closes.
    _served: list[AsyncGenerator[WebhookClientConfig, None]] = dataclasses.field(
        default_factory=list, init=False, repr=False
    )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        while self._served:
            await self._served.pop().aclose()

    def __call__(self, fn: WebhookFn) -> AsyncIterator[WebhookClientConfig]:
        """Listen once and yield the webhooks' client configuration; again, on the same port,
        each time renewed certificate files are served (``tlsfiles``: never a closed port)."""
        served = self._serve(fn)
        self._served.append(served)
        return served

    async def _serve(self, fn: WebhookFn) -> AsyncGenerator[WebhookClientConfig, None]:
        errors = kopfhooks.review_error_statuses()
        direct = direct_answers(kopfhooks.bound_registry(fn))
        handler = answering(kopfhooks.without_memories(fn), errors, self.spared, direct)
        certificate = ServedCertificate(self._ssl, self._certificate_files())
        app = aiohttp.web.Application()
        app.add_routes([aiohttp.web.post(f"{self.path.rstrip('/')}/{{id:.*}}", handler)])
        # No access log: one line per review would be logged at INFO (the operator drops them).
        runner = aiohttp.web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        try:
            port = await self._listen(runner, certificate.listening)
            url = webhook_url(self.host or accessible_host(self.addr), port, self.path)
            while True:
                config = WebhookClientConfig(url=url)
                if certificate.cadata is not None:
                    config["caBundle"] = base64.b64encode(certificate.cadata).decode("ascii")
                yield config
                await certificate.renewed(self.file_check_interval)
        finally:
            await runner.cleanup()  # on any exit: the port is free at once

    def _ssl(self) -> tuple[bytes, ssl.SSLContext]:
        """The CA bundle of the client configuration and the server's SSL context."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        if self.certfile is not None and self.pkeyfile is not None:
            context.load_cert_chain(self.certfile, self.pkeyfile)
            return Path(self.cafile or self.certfile).read_bytes(), context
        address = accessible_host(self.addr)
        certificate, key = self_signed_certificate([self.host or address, address])
        # ssl loads a certificate from files only: these live until loaded, never after.
        with tempfile.TemporaryDirectory(prefix="webhook-certificate-") as directory:
            certfile, keyfile = Path(directory, "tls.crt"), Path(directory, "tls.key")
            certfile.write_bytes(certificate)
            keyfile.write_bytes(key)
            context.load_cert_chain(certfile, keyfile)
        return certificate, context

    def _certificate_files(self) -> list[str]:
        """The files whose change renews the served certificate (none: made in memory)."""
        if self.certfile is None or self.pkeyfile is None:
            return []
        paths = [self.certfile, self.pkeyfile, self.cafile]
        return [str(path) for path in dict.fromkeys(paths) if path is not None]

    async def _listen(self, runner: aiohttp.web.AppRunner, context: ssl.SSLContext | None) -> int:
        """The port listened on (shared with sockets that allow it: ``SO_REUSEPORT``); a bind
        refused is a ``ListenError``."""
        port = self.port or free_port()
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


def webhook_server(settings: Settings) -> WebhookServer:
    """The webhook server the settings describe: a provided certificate, else a self-signed one
    for the advertised host and the listen address."""
    return WebhookServer(
        addr=settings.webhook_address,
        port=settings.webhook_port,
        host=settings.webhook_host,
        certfile=settings.webhook_cert_file,
        pkeyfile=settings.webhook_key_file,
        cafile=settings.webhook_ca_file,
        spared=spared_quota_update,
    )


def configure_admission(tuned: kopf.OperatorSettings, settings: Settings) -> None:
    """Serve the webhooks, and manage their configurations unless someone else does (then with
    the pod webhooks' namespaceSelector). An installed Kopf without a private member this needs
    is an ``UnsupportedKopfError`` naming it (``kopfhooks``), here, at start-up."""
    managed = settings.webhook_configuration
    kopfhooks.require_kopf_hooks(kopfhooks.hooks_for(bool(managed)))
    tuned.admission.server = webhook_server(settings)
    tuned.admission.managed = managed or None
    if managed:
        _POD_EXCLUSIONS[managed] = pod_webhook_excluded_namespaces(settings)
        kopfhooks.replace(kopfhooks.BUILD_WEBHOOKS, build_webhooks_excluding_namespaces)


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
    """Kopf's webhooks of a managed configuration, each pod webhook with the namespaceSelector,
    the quota webhook with its ``matchConditions``.

    Kopf builds the configurations it manages with ``build_webhooks`` (every time the URL or CA
    bundle changes) and has no option for a namespaceSelector, so this replaces that function in
    Kopf's admission engine (``configure_admission``, through ``kopfhooks``);
    tests/integration/test_admission_webhooks_crashed.py reads the selector back from the API
    server, so a Kopf that stopped calling it is noticed."""
    webhooks: list[dict[str, Any]] = kopfhooks.kopf_own(kopfhooks.BUILD_WEBHOOKS)(
        handlers_,
        resources=resources,
        name_suffix=name_suffix,
        client_config=client_config,
        persistent_only=persistent_only,
    )
    excluded = _POD_EXCLUSIONS.get(name_suffix)
    for webhook in webhooks:
        if excluded and matches_pods(webhook):
            webhook["namespaceSelector"] = pod_namespace_selector(excluded)
        if webhook.get("name") == f"{VALIDATE_QUOTA}.{name_suffix}":
            webhook["matchConditions"] = quota_match_conditions()
    return webhooks
