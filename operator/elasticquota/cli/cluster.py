"""The cluster options every cluster-reading command shares, and its one way to the API server.

``add_cluster_options`` gives a command kubectl's ``--kubeconfig``, ``--context``,
``-n/--namespace`` and, where it lists objects, ``-A/--all-namespaces``. ``target`` turns them into
a ``ClusterTarget``: the namespace is the flag's, else the context's, else "default" (in a pod
without a kubeconfig: the service account's). ``read`` checks the kubeconfig and the context
before any connection, runs a reader on an API client whose every request has a bounded connect
(``CONNECT_TIMEOUT``) and read (``READ_TIMEOUT``), the whole within ``TOTAL_TIMEOUT``, and turns
whatever stops it into one ``ClusterReadError`` subclass with a one-line message: a missing or
invalid kubeconfig or an unknown context (exit 3), an unreachable server (4), 401/403 (5), another
status (6). The Kubernetes client is imported only when a command reads a cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from elasticquota.cli.errors import (
    ClusterReadError,
    ForbiddenError,
    KubeconfigError,
    UnreachableError,
)

if TYPE_CHECKING:
    from kubernetes_asyncio import client

T = TypeVar("T")

#: Seconds to open a connection to the API server (an address that drops packets fails this fast).
CONNECT_TIMEOUT = 5.0
#: Seconds one response may take between reads once connected.
READ_TIMEOUT = 30.0
#: Seconds the whole read of a command (every list call) may take.
TOTAL_TIMEOUT = 60.0
#: The namespace of a pod's service account (kubectl's default in-cluster).
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
DEFAULT_NAMESPACE = "default"


def add_cluster_options(command: argparse.ArgumentParser, *, lists: bool) -> None:
    """``--kubeconfig``, ``--context``, ``-n/--namespace`` and, for a listing, ``-A``."""
    group = command.add_argument_group("cluster options")
    group.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig file (default: $KUBECONFIG, "
        "~/.kube/config, else the pod's service account)",
    )  # fmt: skip
    group.add_argument("--context", help="kubeconfig context (default: its current context)")
    group.add_argument(
        "-n", "--namespace",
        help="namespace (default: the context's namespace, else 'default')",
    )  # fmt: skip
    if lists:
        group.add_argument(
            "-A", "--all-namespaces", action="store_true",
            help="every namespace (-n is then ignored)",
        )  # fmt: skip


@dataclass(frozen=True)
class ClusterTarget:
    """Which cluster and namespace a command reads; ``namespace`` None: every namespace."""

    kubeconfig: str | None
    context: str | None
    namespace: str | None


def target(args: argparse.Namespace) -> ClusterTarget:
    """The command's ``ClusterTarget``: the namespace resolved as kubectl does (the kubeconfig is
    read for it only when no ``-n`` or ``-A`` says it)."""
    every = bool(getattr(args, "all_namespaces", False))
    namespace = None if every else args.namespace
    if namespace is None and not every:
        namespace = default_namespace(args.kubeconfig, args.context)
    return ClusterTarget(args.kubeconfig, args.context, namespace)


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The context's namespace, else "default"; without a kubeconfig the service account's.
    ``KubeconfigError`` for an unreadable kubeconfig or an unknown context."""
    from elasticquota.kube.client import kubeconfig_path

    path = kubeconfig_path(kubeconfig)
    if path is None:
        try:
            with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as file:
                return file.read().strip() or DEFAULT_NAMESPACE
        except OSError:
            return DEFAULT_NAMESPACE
    entry = _context(path, context)
    namespace = (entry.get("context") or {}).get("namespace")
    return str(namespace) if namespace else DEFAULT_NAMESPACE


def _context(path: str, context: str | None) -> dict[str, Any]:
    """The kubeconfig's ``context`` entry (default: the current context), as a plain dict."""
    import yaml
    from kubernetes_asyncio.config import ConfigException

    from elasticquota.kube.client import KubeconfigFiles

    where = os.path.expanduser(path)
    files = [one for one in where.split(os.pathsep) if one]
    if not any(os.path.exists(one) for one in files):  # a list's missing files are skipped
        raise KubeconfigError(f"kubeconfig {where}: no such file")
    try:
        merged = KubeconfigFiles(where).config
    except (ConfigException, OSError, ValueError, yaml.YAMLError) as error:
        raise KubeconfigError(f"kubeconfig {where}: {_one_line(error)}") from error
    except (TypeError, AttributeError, KeyError) as error:  # the merger on a non-mapping
        raise KubeconfigError(f"kubeconfig {where}: not a kubeconfig ({error})") from error
    raw = merged.value if merged is not None else None
    if not isinstance(raw, dict):
        raise KubeconfigError(f"kubeconfig {where}: not a kubeconfig (not a mapping)")
    entries = (
        [_plain(item) for item in raw.get("contexts") or []]
        if isinstance(raw.get("contexts") or [], list)
        else None
    )
    if entries is None or not all(isinstance(item, dict) for item in entries):
        raise KubeconfigError(f"kubeconfig {where}: contexts is not a list of named contexts")
    name = context or raw.get("current-context")
    if not name:
        raise KubeconfigError(f"kubeconfig {where}: no current context (choose with --context)")
    for item in entries:
        if item.get("name") == name:
            return dict(item)
    known = ", ".join(str(item.get("name")) for item in entries) or "none"
    raise KubeconfigError(f'kubeconfig {where}: no context "{name}" (contexts: {known})')


def _plain(item: Any) -> Any:
    return item.value if hasattr(item, "value") else item


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


async def _client(target: ClusterTarget) -> client.ApiClient:
    from kubernetes_asyncio import client as kube_client

    from elasticquota.kube.client import load_configuration

    class BoundedApiClient(kube_client.ApiClient):  # type: ignore[misc]  # untyped client
        """Every request: at most ``CONNECT_TIMEOUT`` to connect, ``READ_TIMEOUT`` per read."""

        async def request(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("_request_timeout") is None:
                kwargs["_request_timeout"] = (CONNECT_TIMEOUT, READ_TIMEOUT)
            return await super().request(*args, **kwargs)

    try:
        configuration = await load_configuration(target.kubeconfig, target.context)
    except (AssertionError, TypeError, KeyError, AttributeError, ValueError) as error:
        # the loader's own checks of a context's cluster and user entries
        detail = _one_line(error) if str(error) else "a context's cluster or user is missing"
        raise KubeconfigError(f"invalid kubeconfig: {detail}") from error
    api = BoundedApiClient(configuration=configuration)
    api.rest_client.pool_manager._trust_env = False  # the proxy is settled by the configuration
    return api


async def read(
    target: ClusterTarget,
    reader: Callable[[client.ApiClient], Awaitable[T]],
    timeout: float = TOTAL_TIMEOUT,
) -> T:
    """``reader(api)`` on the target's cluster within ``timeout`` seconds; whatever stops it is
    one ``ClusterReadError`` (exit code by cause)."""
    check_kubeconfig(target)
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline, _connected(target) as api:
            return await reader(api)
    except ClusterReadError:
        raise
    except TimeoutError as error:
        if deadline.expired():
            message = f"cannot read the cluster: not read within {timeout:g}s"
            raise UnreachableError(message) from error
        raise translate(error) from error  # a request's own bound
    except Exception as error:
        raise translate(error) from error


def check_kubeconfig(target: ClusterTarget) -> None:
    """A clear ``KubeconfigError`` before any connection: no kubeconfig outside a pod, a missing
    or invalid file, an unknown context."""
    from elasticquota.kube.client import kubeconfig_path

    path = kubeconfig_path(target.kubeconfig)
    if path is not None:
        _context(path, target.context)
    elif target.context is not None:
        raise KubeconfigError("no kubeconfig for --context (--kubeconfig, $KUBECONFIG)")
    elif "KUBERNETES_SERVICE_HOST" not in os.environ:
        raise KubeconfigError(
            "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a pod"
        )


@asynccontextmanager
async def _connected(target: ClusterTarget) -> AsyncIterator[client.ApiClient]:
    api = await _client(target)
    try:
        yield api
    finally:
        await api.close()


async def listed(what: str, call: Awaitable[T]) -> T:
    """``call``'s answer; an error status is the ``ClusterReadError`` that names ``what`` the
    call listed (``translate``): a user whose RBAC allows some of a command's reads learns which
    one to ask for."""
    from kubernetes_asyncio.client.exceptions import ApiException

    try:
        return await call
    except ApiException as error:
        raise translate(error, what) from error


def translate(error: Exception, listing: str = "") -> Exception:
    """The ``ClusterReadError`` of an error of the Kubernetes client (others are returned as
    they are: a bug, for ``main``'s last resort). An error status says what was being listed,
    if known, and the server's own message (a 403's names the user, the resource and the
    scope)."""
    import aiohttp
    from kubernetes_asyncio.client.exceptions import ApiException
    from kubernetes_asyncio.config import ConfigException

    if isinstance(error, ApiException):
        said = _api_error(error, listing)
        if error.status in (401, 403):
            return ForbiddenError(f"cannot read the cluster: {said} (check the credentials "
                                  "and RBAC of the kubeconfig's user)")  # fmt: skip
        return ClusterReadError(f"cannot read the cluster: {said}")
    if isinstance(error, ConfigException):
        return KubeconfigError(f"invalid kubeconfig: {_one_line(error)}")
    if isinstance(error, aiohttp.ServerTimeoutError | asyncio.TimeoutError):
        return UnreachableError(
            f"cannot reach the API server: no answer within {CONNECT_TIMEOUT:g}s "
            f"(connect) / {READ_TIMEOUT:g}s (read)"
        )
    if isinstance(error, aiohttp.ClientError | OSError):
        return UnreachableError(f"cannot reach the API server: {_one_line(error)}")
    return error


def _api_error(error: Any, listing: str) -> str:
    """``STATUS REASON[ listing WHAT][: the server's message]``, the message left out where it
    only repeats the reason."""
    from elasticquota.kube.errors import server_message

    reason = error.reason or ""
    said = f"{error.status} {reason}".strip() + (f" listing {listing}" if listing else "")
    message = " ".join(server_message(error).split())  # one line
    return f"{said}: {message}" if message and message.lower() != reason.lower() else said
