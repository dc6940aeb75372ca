"""Pod evictions through the Eviction API, so that PodDisruptionBudgets are honoured.

``policy/v1`` first; an API server that does not know it (before Kubernetes 1.22 it answers 400 "no
kind Eviction is registered for version policy/v1") gets ``policy/v1beta1`` from then on. A 429 is a
PodDisruptionBudget (or throttling) saying "not now": the pod stays and a later round tries again,
so it is not retried here (one POST: a budget that refuses now refuses a moment later too, and the
retries would only hold the round up). A 404 means the pod is already gone. Other transient
failures (5xx, timeouts, broken connections) are retried (``kube.errors.with_retries``).

Given the creation time of the pod the decision was about (``PodInfo.created``, which memory holds
anyway; a uid per pod would cost 90 bytes more each), the eviction is of that pod only: the pod is
read first (``kube.pods.uid_if_created_at``, one GET: evictions are few, at most
``eviction_rate`` a second), a pod created at another time under the name (a StatefulSet's,
deleted and recreated since) is GONE without an eviction, and the eviction of the right one names
it by its uid (``deleteOptions.preconditions.uid``, which both versions take), so that a pod
recreated between the read and the eviction is not evicted either: the API server answers 409
("the UID in the precondition ... does not match"), and that pod is GONE. A 409 is never retried
here: the API server has already retried its own conflicts. The answer is the outcome with the uid
of the pod read (``EvictionResult``): the Events about the pod name it, so that ``kubectl describe
pod`` (whose field selector names the pod's uid) lists them. An eviction request that fails
(another refusal, or transient failures that outlast the retries) raises ``EvictionError`` from
its cause, with that uid too, for the Event that says why the pod stays; a write the fence refused
(``NotLeadingError``: nothing was sent) is raised as it is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import logging
from collections.abc import Iterator
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import (
    CausedError,
    describe,
    is_retryable,
    raise_for_status,
    status_of,
    with_retries,
)
from elasticquota.kube.fence import NotLeadingError
from elasticquota.kube.pods import uid_if_created_at

logger = logging.getLogger(__name__)

EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")


class EvictionOutcome(enum.Enum):
    EVICTED = "evicted"
    BLOCKED = "blocked"  # 429: a PodDisruptionBudget (or throttling) refused it for now
    GONE = "gone"  # 404, or 409 on a uid precondition: the pod decided about is not there
    NOT_SENT = "not sent"  # a dry run: the eviction was not asked for (never counted)


@dataclasses.dataclass(frozen=True)
class EvictionResult:
    """How an eviction ended, and the uid of the pod it was about (``""``: not read, as without
    a creation time, in a dry run, or when another pod has the name)."""

    outcome: EvictionOutcome
    uid: str = ""


class EvictionError(CausedError):
    """An eviction request that failed, raised ``from`` its ``cause`` (described and judged as
    that cause, ``kube.errors``), with the uid of the pod read before it (``""``: not read)."""

    def __init__(self, cause: BaseException, uid: str) -> None:
        super().__init__(cause)
        self.uid = uid


@contextlib.contextmanager
def failing_as_eviction(uid: str) -> Iterator[None]:
    """Raise the failures of the block (an eviction's request) as ``EvictionError`` naming
    ``uid``, from their cause; a write the fence refused (``NotLeadingError``) as it is."""
    try:
        yield
    except NotLeadingError:
        raise
    except Exception as error:
        raise EvictionError(error, uid) from error


def uid_of_failure(error: BaseException) -> str:
    """The uid of the pod an eviction's failure was about (``""``: not read, or no eviction's
    failure: the read of the pod failed)."""
    return error.uid if isinstance(error, EvictionError) else ""


def _worth_retrying(error: BaseException) -> bool:
    """Transient failures, but not a 429 (a refusal for now is the answer: ``BLOCKED``) nor a 409
    (another pod under the name, or conflicts the API server gave up retrying)."""
    return is_retryable(error) and status_of(error) not in (409, 429)


def _is_unknown_version(error: ApiException) -> bool:
    body = error.body.decode(errors="replace") if isinstance(error.body, bytes) else error.body
    return (
        isinstance(body, str) and error.status in (400, 404) and "is registered for version" in body
    )


class Evictor:
    """Evicts pods, remembering which Eviction version the API server speaks."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._versions = list(EVICTION_VERSIONS)

    def _body(self, namespace: str, name: str, uid: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": self._versions[0],
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        return body

    async def _post(self, namespace: str, name: str, uid: str) -> None:
        response = await client.CoreV1Api(self._api).create_namespaced_pod_eviction(
            name, namespace, self._body(namespace, name, uid), _preload_content=False
        )
        await raise_for_status(response)

    async def evict(self, namespace: str, name: str, created: str = "") -> EvictionResult:
        """Evict one pod, the one created at ``created`` if given, read first: the outcome with
        that pod's uid (``_refused`` says which refusals are an outcome; the others are raised,
        after transient retries, as ``EvictionError`` with the uid)."""
        uid = ""
        if created:
            found = await uid_if_created_at(self._api, namespace, name, created, "evicted")
            if found is None:
                return EvictionResult(EvictionOutcome.GONE)
            uid = found
        with failing_as_eviction(uid):
            return await self._sent(namespace, name, uid)

    async def _sent(self, namespace: str, name: str, uid: str) -> EvictionResult:
        """The eviction's POST (``policy/v1beta1`` after ``policy/v1`` if the server does not
        know it), transient failures retried: its outcome, or its failure raised."""
        while True:
            try:
                await with_retries(
                    lambda: self._post(namespace, name, uid),
                    f"evict Pod {namespace}/{name}",
                    attempts=3,
                    retry_on=_worth_retrying,
                )
            except ApiException as error:
                if _is_unknown_version(error) and len(self._versions) > 1:
                    self._versions.pop(0)
                    continue
                outcome = _refused(error, f"Pod {namespace}/{name}", uid)
                if outcome is None:
                    raise
                return EvictionResult(outcome, uid)
            return EvictionResult(EvictionOutcome.EVICTED, uid)


def _refused(error: ApiException, pod: str, uid: str) -> EvictionOutcome | None:
    """The outcome of a refused eviction of ``pod``: GONE on a 404 (and on a 409 when it named
    the ``uid``), BLOCKED on a 429; None: a failure, for the caller to raise."""
    if error.status == 404 and not _is_unknown_version(error):
        return EvictionOutcome.GONE
    if error.status == 409 and uid:
        logger.info("%s not evicted: another pod has its name (%s)", pod, describe(error))
        return EvictionOutcome.GONE
    if error.status == 429:
        return EvictionOutcome.BLOCKED
    return None
