"""One API client for the operator and the CLI: from a kubeconfig, $KUBECONFIG, or in-cluster.

The operator's client tells an observer about every request that fails (the API error metric): the
kube layer knows no metrics, so whoever builds the client passes a plain callback. A failure is
one HTTP attempt that got an error status, timed out or lost its connection; each retry of
``kube.errors.with_retries`` is an attempt of its own. Only the requests sent through this client
are seen (writes, evictions, Events, the Lease), not Kopf's watch streams.

A kubeconfig's inline certificate data (``certificate-authority-data``, ``client-certificate-data``,
``client-key-data``) never reaches the file system: ``kubernetes_asyncio``'s loader would write each
to a temporary file removed only at a normal exit, so every killed process left one behind (and a
private key on disk). Python's ``ssl`` loads certificates from paths only, so on Linux they are put
in anonymous memory files (``memfd_create``) named by ``/proc/self/fd/N``, which live exactly as
long as the process; elsewhere the loader's temporary files remain.

The operator's client is also *fenced* (``kube.fence.Fence``): a write (any method but GET) is
sent only while this replica holds a freshly renewed Lease, and is abandoned when the fence closes
(the renew deadline passed) — so no quota write, eviction, gate release or Event leaves an old
leader, whichever loop sends it. A write so abandoned is reported as ``fenced``, not as a timeout:
it says nothing about the connection, whose pool is kept. The elector has a client of its own,
unfenced.

A connection can stop carrying traffic without being closed (a NAT entry or a load balancer's flow
that silently disappears): a request sent on it waits for an answer that never comes. So every
request of the operator's client is bounded (``request_timeout``: the whole answer, the body of
one read raw, ``_preload_content=False``, included), its sockets have TCP keepalive
on (the kernel then notices a peer that vanished), and a request that timed out retires the whole
connection pool: its siblings went through the same path and are likely dead as well, so the
retry, and every request after it, opens fresh connections (``ObservedApiClient.renew_pool``).
The retired pool is closed once the requests still running on it have had their time.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import logging
import os
import socket
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohappyeyeballs import AddrInfoType
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

from elasticquota.kube.fence import Fence

#: ``observer(verb, code)``: verb ``get``, ``list``, ``create``, ``update``, ``patch``, ``delete``
#: or ``evict``; code the HTTP status (``"409"``), ``"timeout"``, ``"connection"`` or ``"fenced"``
#: (a write abandoned when the Lease's fence closed, ``ObservedApiClient._timed_out``).
ApiErrorObserver = Callable[[str, str], None]

_VERBS = {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}

logger = logging.getLogger(__name__)

#: TCP keepalive of the API connections: the first probe after this many idle seconds, then one
#: every ``KEEPALIVE_INTERVAL`` s; ``KEEPALIVE_PROBES`` unanswered probes close the connection
#: (a peer gone without a word is noticed after about a minute of silence, not the kernel's hours).
KEEPALIVE_IDLE = 30
KEEPALIVE_INTERVAL = 10
KEEPALIVE_PROBES = 3
#: Read buffer of a session (as kubernetes_asyncio sets it: one object may be up to 1.5 MiB).
READ_BUFFER = 2**21


def api_verb(method: str, url: str) -> str:
    """The verb of a request, as Kubernetes audit logs name it (collections are listed)."""
    if method == "GET":
        return "list" if _is_collection(urlsplit(url).path) else "get"
    if method == "POST":
        return "evict" if url.split("?")[0].endswith("/eviction") else "create"
    return _VERBS.get(method, method.lower())


def _is_collection(path: str) -> bool:
    """``/api/v1/pods``, ``/apis/g/v/namespaces/ns/things``: no object name after the resource."""
    segments = [segment for segment in path.split("/") if segment]
    for position, segment in enumerate(segments):
        if segment in ("api", "apis"):
            rest = segments[position + (2 if segment == "api" else 3) :]
            break
    else:
        return False
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        rest = rest[2:]  # namespaced: drop namespaces/<namespace>
    return len(rest) == 1


class ObservedApiClient(client.ApiClient):  # type: ignore[misc]  # the client is untyped
    """An ApiClient that reports failed requests, each attempt bounded by ``request_timeout``;
    a timed-out attempt retires the connection pool (``renew_pool``)."""

    def __init__(
        self,
        configuration: client.Configuration,
        observer: ApiErrorObserver,
        request_timeout: float | None = None,
        fence: Fence | None = None,
    ) -> None:
        super().__init__(configuration=configuration)
        self._observer = observer
        self._request_timeout = request_timeout
        self._fence = fence
        #: Pools replaced by a fresh one (closed later, or with the client), and their closers.
        self._retired: list[aiohttp.ClientSession] = []
        self._closers: set[asyncio.Task[None]] = set()
        # The generated client's pool, rebuilt with keepalive sockets (same TLS, same size); the
        # original has no connection yet and is closed with the client.
        original = self.rest_client.pool_manager
        self.rest_client.pool_manager = pooled_session(original.connector)
        self._retired.append(original)

    def _timeout(self, method: str, verb: str, url: str) -> tuple[float | None, bool]:
        """The request's bound: the request timeout, for a fenced write at most what is left of
        the fence (``NotLeadingError`` when it is closed); and whether the fence is the bound."""
        if self._fence is None or method in ("GET", "HEAD", "OPTIONS"):
            return self._request_timeout, False
        what = f"{verb} {urlsplit(url).path}"
        budget = self._fence.admit(what)
        logger.debug("write %s: sent, the fence closes in %.3f s", what, budget)
        if self._request_timeout is not None and self._request_timeout <= budget:
            return self._request_timeout, False
        return budget, True

    async def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        verb = api_verb(method, url)
        timeout, fenced = self._timeout(method, verb, url)
        pool = self.rest_client.pool_manager
        response = None
        try:
            async with asyncio.timeout(timeout):
                response = await super().request(method, url, *args, **kwargs)
                await _read_raw_answer(response, kwargs.get("query_params"))
        except ApiException as error:
            self._observer(verb, str(error.status))
            raise
        except TimeoutError:
            if isinstance(response, aiohttp.ClientResponse):
                response.close()  # its body never came: the connection is not reused
            self._timed_out(verb, pool, fenced)
            raise
        except (OSError, aiohttp.ClientError):
            self._observer(verb, "connection")
            raise
        if not 200 <= response.status <= 299:  # read raw (unpreloaded): not checked by the client
            self._observer(verb, str(response.status))
        return response

    def _timed_out(self, verb: str, pool: aiohttp.ClientSession, fenced: bool) -> None:
        """Report a request abandoned at its bound. At the fence's (``fenced``: the Lease was not
        renewed in time) it is ``fenced`` and says nothing about the connections: the pool stays.
        Otherwise a ``timeout``, and the pool it was sent on is retired (once per pool, not per
        hung request)."""
        if fenced:
            self._observer(verb, "fenced")
            return
        self._observer(verb, "timeout")
        if self.rest_client.pool_manager is pool:
            self.renew_pool()

    def renew_pool(self) -> None:
        """New requests open fresh connections; the old pool is closed after ``request_timeout``
        (the requests still running on it end by then, answered or timed out)."""
        old = self.rest_client.pool_manager
        self.rest_client.pool_manager = pooled_session(old.connector)
        self._retired = [pool for pool in self._retired if not pool.closed]
        self._retired.append(old)
        closer = asyncio.create_task(_close_later(old, self._request_timeout or 0.0))
        self._closers.add(closer)
        closer.add_done_callback(self._closers.discard)

    async def close(self) -> None:
        for closer in list(self._closers):
            closer.cancel()
        await asyncio.gather(*self._closers, return_exceptions=True)
        for pool in self._retired:
            await _close(pool)
        await super().close()


async def _read_raw_answer(response: Any, query: Any) -> None:
    """Read the body of an answer the generated client left unread (``_preload_content=False``:
    an eviction, a gate release), unless it is a watch's stream: aiohttp keeps it for the
    caller's ``read()``, and the request's bound covers the whole answer, as it covers a
    preloaded one (and the connection, read to its end, goes back to the pool)."""
    if not isinstance(response, aiohttp.ClientResponse):
        return  # preloaded: read by the generated client already
    if any(key == "watch" and str(value).lower() in ("true", "1") for key, value in query or ()):
        return
    await response.read()


def keepalive_socket(addr_info: AddrInfoType) -> socket.socket:
    """A socket as aiohttp would open it, with TCP keepalive on (``KEEPALIVE_*``)."""
    family, kind, protocol, _, _ = addr_info
    sock = socket.socket(family=family, type=kind, proto=protocol)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE),  # Linux; macOS names it TCP_KEEPALIVE
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    ):
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
    return sock


def pooled_session(like: aiohttp.BaseConnector | None) -> aiohttp.ClientSession:
    """A session with a new pool of keepalive connections, with the TLS settings and size of
    the connector ``like`` (the generated client's). The environment's proxy variables are not
    looked up at every request (``settle_environment_proxy`` resolves them once)."""
    tls = getattr(like, "_ssl", True)  # aiohttp keeps the connector's TLS context there
    limit = like.limit if like is not None else 100
    connector = aiohttp.TCPConnector(limit=limit, ssl=tls, socket_factory=keepalive_socket)
    return aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=READ_BUFFER)


async def _close_later(session: aiohttp.ClientSession, delay: float) -> None:
    await asyncio.sleep(delay)
    await _close(session)


async def _close(session: aiohttp.ClientSession) -> None:
    """Close a pool; its TLS connections are aborted, not shut down politely (a dead path would
    never answer the close)."""
    connector = session.connector
    if connector is not None and not connector.closed:
        with contextlib.suppress(Exception):
            await connector.close(abort_ssl=True)
    await session.close()


async def make_api_client(
    kubeconfig: str | None = None,
    observer: ApiErrorObserver | None = None,
    request_timeout: float | None = None,
    fence: Fence | None = None,
    context: str | None = None,
) -> client.ApiClient:
    """An ApiClient: ``kubeconfig``, else $KUBECONFIG or ~/.kube/config, else in-cluster; its
    ``context`` (default: the kubeconfig's current context).

    With an ``observer``, failed requests are reported to it and each request is abandoned after
    ``request_timeout`` seconds (a ``TimeoutError``, which ``with_retries`` retries); with a
    ``fence`` too, writes are sent only through it (``ObservedApiClient._timeout``).
    """
    configuration = await load_configuration(kubeconfig, context)
    api = (
        client.ApiClient(configuration=configuration)
        if observer is None
        else ObservedApiClient(configuration, observer, request_timeout, fence)
    )
    # The generated client's session trusts the environment: aiohttp then looks up the proxy
    # variables and reads ~/.netrc in a worker thread for every request (a tenth of the event
    # loop's time while writing 10,000 quotas). The proxy is settled once above instead.
    api.rest_client.pool_manager._trust_env = False
    return api


def kubeconfig_path(kubeconfig: str | None = None) -> str | None:
    """The kubeconfig to load: ``kubeconfig``, else $KUBECONFIG, else ~/.kube/config when it
    exists; None: in-cluster."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if path or os.path.exists(os.path.expanduser(DEFAULT_KUBECONFIG)):
        return path or DEFAULT_KUBECONFIG
    return None


async def load_configuration(
    kubeconfig: str | None = None, context: str | None = None
) -> client.Configuration:
    """The client configuration of ``kubeconfig_path(kubeconfig)`` and its ``context``, else the
    in-cluster one; the environment's proxy settled."""
    path = kubeconfig_path(kubeconfig)
    configuration = client.Configuration()
    if path is not None:
        await load_kubeconfig(path, configuration, context)
    else:
        config.load_incluster_config(client_configuration=configuration)
    settle_environment_proxy(configuration)
    return configuration


def settle_environment_proxy(configuration: client.Configuration) -> None:
    """Resolve ``HTTPS_PROXY``/``NO_PROXY`` for the API server once, as ``trust_env`` would at every
    request: the kubeconfig's own proxy wins; a host ``NO_PROXY`` covers goes direct."""
    if configuration.proxy:
        return
    url = urlsplit(configuration.host)
    if url.hostname is None or urllib.request.proxy_bypass(url.hostname):
        return
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy:
        configuration.proxy = proxy


# -- the kubeconfig, its inline certificates kept in memory ------------------------------------

DEFAULT_KUBECONFIG = "~/.kube/config"
#: (section, entry key, file key) of the kubeconfig entries whose ``<file key>-data`` is inline
#: base64 certificate data.
INLINE_CERTIFICATES = (
    ("clusters", "cluster", "certificate-authority"),
    ("users", "user", "client-certificate"),
    ("users", "user", "client-key"),
)
#: The memory files made so far, by content: loading the same kubeconfig again reuses them.
_memory_files: dict[bytes, str] = {}


def memory_files_supported() -> bool:
    return hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")


def memory_file(content: bytes) -> str:
    """A path whose content is ``content``, held in this process's memory only (Linux)."""
    path = _memory_files.get(content)
    if path is None:
        descriptor = os.memfd_create("kubeconfig-certificate", os.MFD_CLOEXEC)
        view = memoryview(content)
        while view:
            view = view[os.write(descriptor, view) :]
        path = _memory_files[content] = f"/proc/self/fd/{descriptor}"
    return path


def certificates_in_memory(kubeconfig: ConfigNode) -> ConfigNode:
    """A copy of a (merged) kubeconfig whose inline certificate data are memory files.

    A copy: the loader may persist token refreshes into the original files, which must never get
    these paths."""
    copied: ConfigNode = copy.deepcopy(kubeconfig)
    for section, key, file_key in INLINE_CERTIFICATES:
        for item in copied.value.get(section) or []:
            entry = (item.value if isinstance(item, ConfigNode) else item).get(key)
            if not isinstance(entry, dict) or not entry.get(f"{file_key}-data"):
                continue
            data = entry.pop(f"{file_key}-data")
            try:
                content = base64.standard_b64decode(data)
            except (binascii.Error, ValueError, TypeError) as error:
                name = (item.value if isinstance(item, ConfigNode) else item).get("name")
                raise config.ConfigException(
                    f"kubeconfig {section} entry {name!r}: {file_key}-data is not base64 ({error})"
                ) from None
            entry[file_key] = memory_file(content)
    return copied


async def load_kubeconfig(
    path: str, configuration: client.Configuration, context: str | None = None
) -> None:
    """Load a kubeconfig (``path``: one file or a $KUBECONFIG-style list) into ``configuration``,
    with its ``context`` (default: the current context), its inline certificates in memory files
    where the platform has them."""
    files = KubeconfigFiles(path)
    merged = files.config
    if merged is None:
        raise config.ConfigException(f"no kubeconfig found at {path}")
    in_memory = memory_files_supported()
    loader = KubeConfigLoader(
        config_dict=certificates_in_memory(merged) if in_memory else merged,
        active_context=context,
        config_base_path=None,
        # elsewhere: the loader's temporary files, and its token refreshes saved to the files
        config_persister=None if in_memory else files.save_changes,
    )
    await loader.load_and_set(configuration)


class KubeconfigFiles(KubeConfigMerger):  # type: ignore[misc]  # untyped library class
    """The files of a $KUBECONFIG-style list merged as kubectl merges them: the first file that
    sets ``current-context`` (to a non-empty name) wins, as the first to set any other key does
    (the library's merger let the last file's ``current-context`` win)."""

    def load_config(self, path: str) -> None:
        merged = self.config_merged
        chosen = merged.value.get("current-context") if merged is not None else None
        super().load_config(path)
        if chosen:
            self.config_merged.value["current-context"] = chosen
