"""The HTTP side of a reader (``kube.reflector``): its own session, the kind's URL, the client's
credentials, and what an answer's status means for the reader.

A reader's session never reuses a connection: a pooled connection may be the silently dead one
(a NAT entry or a load balancer's flow that disappeared), and every list and watch is long enough
that a fresh connection costs nothing in comparison. Its sockets have TCP keepalive on
(``kube.client.keepalive_socket``).

An answer other than 200 is raised: ``410 Gone`` as ``VersionExpiredError`` (the resourceVersion is
too old: list again), any other as ``HttpStatusError``, which tells whether waiting may lift it
(``transient``: 429 throttled by API Priority and Fairness, a 5xx) and whether the watch cache was
asked for a version it has not seen yet (``too_large_version``: a consistent read from etcd
answers at once where the cache would keep refusing for a while).
"""

from __future__ import annotations

import asyncio
import ssl

import aiohttp
import orjson
from kubernetes_asyncio import client

from elasticquota.api import Body
from elasticquota.kube.client import keepalive_socket
from elasticquota.kube.readerparts import VersionExpiredError

#: Seconds given to TLS connections to finish closing when a reader stops.
TLS_CLOSE_GRACE = 0.25
#: How the API server says the watch cache is behind the resourceVersion asked for (504, after
#: waiting 3 s for the cache to catch up): the reason of the Status's cause, and its message.
TOO_LARGE_MARKERS = ("ResourceVersionTooLarge", "Too large resource version")


class HttpStatusError(Exception):
    """An answer other than 200 and 410."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {status_message(body)}")
        self.status = status
        self.too_large_version = status == 504 and any(m in body for m in TOO_LARGE_MARKERS)

    @property
    def transient(self) -> bool:
        """A refusal that waiting may lift: the same request is to be sent again later."""
        return self.status == 429 or (self.status >= 500 and not self.too_large_version)


def ssl_context(configuration: client.Configuration) -> ssl.SSLContext:
    """The TLS settings of a kubeconfig, as the generated client builds them."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class ReaderHttp:
    """Requests of one reader to the collection at ``path``, on connections of its own."""

    def __init__(self, api: client.ApiClient, path: str) -> None:
        self._api = api
        self._path = path
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        """The collection's URL (read at each request: the client is not touched before)."""
        return f"{self._api.configuration.host}{self._path}"

    def session(self) -> aiohttp.ClientSession:
        """The reader's session (opened at its first use): it never reuses a connection."""
        if self._session is None:
            context = ssl_context(self._api.configuration)
            connector = aiohttp.TCPConnector(
                ssl=context, force_close=True, socket_factory=keepalive_socket
            )
            self._session = aiohttp.ClientSession(connector=connector, read_bufsize=2**21)
        return self._session

    async def headers(self) -> dict[str, str]:
        """JSON, and the client's credentials (its token refresh included)."""
        headers = {"Accept": "application/json"}
        await self._api.update_params_for_auth(headers, [], ["BearerToken"])
        return headers

    async def open(self, params: dict[str, str], *, encoding: str = "") -> aiohttp.ClientResponse:
        """A 200 answer to a GET of the collection, its body not read yet (the caller closes it);
        ``encoding``: asked for (``Accept-Encoding``) and left as it comes. Unbounded: the caller
        bounds it."""
        headers = await self.headers()
        if encoding:
            headers["Accept-Encoding"] = encoding
        reply = await self.session().get(
            self.url, params=params, headers=headers, auto_decompress=not encoding
        )
        try:
            await check(reply)
        except BaseException:
            reply.close()
            raise
        return reply

    async def get_json(self, params: dict[str, str], timeout: float) -> Body:
        """The whole answer to a GET of the collection, as JSON, within ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            async with await self.open(params) as reply:
                return dict(orjson.loads(await reply.read()))

    async def close(self) -> None:
        """Close the session (a later request opens a new one)."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
            # aiohttp's graceful shutdown: TLS connections finish closing a moment after the
            # session (else their sockets outlive a closed event loop, unclosed).
            await asyncio.sleep(TLS_CLOSE_GRACE)


async def check(reply: aiohttp.ClientResponse) -> None:
    """Raise unless the answer is 200: ``VersionExpiredError`` for 410, else ``HttpStatusError``."""
    if reply.status == 410:
        raise VersionExpiredError(status_message(await reply.text()))
    if reply.status != 200:
        raise HttpStatusError(reply.status, await reply.text())


def status_message(body: str) -> str:
    """The ``message`` of a ``Status`` answer; else the start of the answer as it came."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        document = None
    message = document.get("message") if isinstance(document, dict) else None
    return str(message) if message else body[:300]


def cause(error: BaseException) -> str:
    """What broke a watch or a list, in a few words (aiohttp's own messages run long)."""
    if isinstance(error, HttpStatusError):
        return str(error)
    if isinstance(error, aiohttp.ClientPayloadError):
        return f"the connection was closed in the middle of the stream: {error.__cause__ or error}"
    if isinstance(error, aiohttp.ClientConnectorError):
        return (
            f"cannot connect to {error.host}:{error.port} ({error.os_error.strerror or 'refused'})"
        )
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    return f"{type(error).__name__}: {error}"
