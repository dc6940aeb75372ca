"""API errors as retry decisions, and a retry loop with exponential backoff.

409 (conflict), 429 (throttled) and 5xx are transient: retried with backoff. Everything else is
final and raised to the caller, who decides (usually: log, count, and try again next round). A
call for which such a status is an answer, not a failure, passes its own ``retry_on`` (an
eviction: a 429 is a PodDisruptionBudget's refusal, ``kube.evictions``). A failure raised ``from``
an API error to carry what its caller needs besides (``CausedError``: an eviction's carries the
uid of the pod it read) is described, judged transient or not and given a status as its cause, so
that the logs, the outage judgement and the Events read as they would for the cause itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.client.rest import RESTResponse

T = TypeVar("T")
logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = frozenset({409, 429})
#: Attempts of a start-up step (the API server's version, the reserved namespace): a transient
#: failure there would otherwise stop the operator, so it gets about 16 s of backoff, not 3.
START_UP_ATTEMPTS = 8


class CausedError(Exception):
    """A failure raised ``from`` its ``cause`` (an API error, a timeout...) with what the caller
    needs besides (a subclass's fields): ``describe``, ``is_retryable`` and ``status_of`` take it
    for its cause."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(describe(cause))
        self.cause = cause


def cause_of(error: BaseException) -> BaseException:
    """The error a ``CausedError`` was raised from (any other error: itself)."""
    while isinstance(error, CausedError):
        error = error.cause
    return error


def is_retryable(error: BaseException) -> bool:
    """Transient API failures: conflicts, throttling, server errors, broken connections (an
    answer cut off in its body too: every write the operator sends is safe to send again, a
    repeated creation or eviction answers 409 or 404, which its caller reads as done)."""
    error = cause_of(error)
    if isinstance(error, ApiException):
        return error.status in RETRYABLE_STATUSES or (error.status or 0) >= 500
    # aiohttp's ServerDisconnectedError, ClientPayloadError and kin are no OSError.
    transient = (OSError, asyncio.TimeoutError, aiohttp.ClientConnectionError)
    return isinstance(error, (*transient, aiohttp.ClientPayloadError))


def describe(error: BaseException) -> str:
    """One line: the HTTP status and the server's message, or the exception itself (of a
    ``CausedError``: of its cause)."""
    error = cause_of(error)
    if isinstance(error, ApiException):
        return f"HTTP {error.status}: {server_message(error)}"
    return f"{type(error).__name__}: {error}"


def server_message(error: ApiException) -> str:
    """The message of the Status object an error answer carries, else the status's reason."""
    message = error.reason or ""
    with contextlib.suppress(TypeError, ValueError, AttributeError):  # no JSON object
        message = json.loads(error.body or "{}").get("message") or message
    return str(message)


async def raise_for_status(response: Any) -> None:
    """Check and release an unpreloaded response (``_preload_content=False``).

    Some replies (Status objects from subresources like binding and eviction) cannot be read as the
    generated model; read raw, the client no longer checks their status, so this does.
    """
    try:
        await _raise_unless_ok(response)
    finally:
        response.release()


async def read_json(response: Any) -> Any:
    """The JSON body of an unpreloaded response, its status checked (``raise_for_status``)."""
    try:
        await _raise_unless_ok(response)
        return json.loads(await response.read())
    finally:
        response.release()


async def _raise_unless_ok(response: Any) -> None:
    """An ``ApiException`` carrying the answer, unless the status is 2xx."""
    if not 200 <= response.status <= 299:
        raise ApiException(http_resp=RESTResponse(response, await response.read()))


def status_of(error: BaseException) -> int | None:
    """The HTTP status of an API error (None for connection errors)."""
    error = cause_of(error)
    return error.status if isinstance(error, ApiException) else None


async def with_retries(
    call: Callable[[], Awaitable[T]],
    what: str,
    attempts: int = 5,
    first_delay: float = 0.2,
    max_delay: float = 5.0,
    attempt_timeout: float = 30.0,
    retry_on: Callable[[BaseException], bool] = is_retryable,
) -> T:
    """Run ``call``, retrying transient failures with exponential backoff; re-raise the rest.

    Each attempt is bounded by ``attempt_timeout`` seconds (a timeout is transient too), so that no
    request can hang a loop forever. ``retry_on`` says which failures are transient for this call
    (default ``is_retryable``; an eviction takes a 429 as its answer, not as throttling).
    """
    delay = first_delay
    for attempt in range(1, attempts + 1):
        try:
            return await asyncio.wait_for(call(), attempt_timeout)
        except Exception as error:
            if attempt == attempts or not retry_on(error):
                raise
            logger.debug(
                "%s failed (%s), retry %d in %.1fs", what, status_of(error), attempt, delay
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_delay)
    raise AssertionError("unreachable")  # pragma: no cover
