"""Kubernetes Events: how the operator tells users about a broken object, on the object itself.

Repeats are aggregated as client-go's Event correlator does for core/v1 Events: the same reason,
message and type on the same object, posted again, increments the ``count`` and moves the
``lastTimestamp`` of the Event already posted (one merge patch) instead of creating another
Event object. A condition that stands for hours (an over-used quota with nothing to evict gets a
round every revocation delay) is then one Event whose count grows, as ``kubectl describe`` shows
it ("x12 over 1h"). The series are remembered per API client (one per process), at most
``SERIES_LIMIT`` of them, least recently posted forgotten first; after a restart, or when the
Event has expired (the API server's TTL, one hour by default), a repeat creates a new Event.
"""

from __future__ import annotations

import datetime
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import with_retries

COMPONENT = "elastic-quota-operator"
MESSAGE_LIMIT = 1024
#: Event series remembered per API client (client-go's correlator keeps 4096 too).
SERIES_LIMIT = 4096
MERGE_PATCH = "application/merge-patch+json"

SeriesKey = tuple[str, ...]


@dataclass(slots=True)
class _Series:
    """The Event posted for one (object, reason, message, type), and how often it happened."""

    namespace: str
    name: str
    count: int


#: Per API client: the series of its Events, least recently posted first.
_SERIES: weakref.WeakKeyDictionary[client.ApiClient, OrderedDict[SeriesKey, _Series]] = (
    weakref.WeakKeyDictionary()
)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_body(
    involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
) -> dict[str, Any]:
    """A core/v1 Event about ``involved`` (apiVersion, kind, namespace, name, uid)."""
    now = _now()
    namespace = involved.get("namespace") or "default"
    return {
        "metadata": {
            "name": f"{involved['name']}.{uuid.uuid4().hex[:12]}",
            "namespace": namespace,
        },
        "involvedObject": involved,
        "reason": reason,
        "message": message[:MESSAGE_LIMIT],
        "type": event_type,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def series_key(involved: dict[str, str], reason: str, message: str, event_type: str) -> SeriesKey:
    """What makes two Events the same (client-go's ``getEventKey``, without the source host)."""
    return (
        involved.get("apiVersion", ""),
        involved.get("kind", ""),
        involved.get("namespace", ""),
        involved.get("name", ""),
        involved.get("uid", ""),
        reason,
        message[:MESSAGE_LIMIT],
        event_type,
    )


def _series_of(api: client.ApiClient) -> OrderedDict[SeriesKey, _Series]:
    series = _SERIES.get(api)
    if series is None:
        series = _SERIES[api] = OrderedDict()
    return series


def _remember(api: client.ApiClient, key: SeriesKey, series: _Series) -> None:
    known = _series_of(api)
    known[key] = series
    known.move_to_end(key)
    while len(known) > SERIES_LIMIT:
        known.popitem(last=False)


async def post_event(
    api: client.ApiClient,
    involved: dict[str, str],
    reason: str,
    message: str,
    event_type: str = "Warning",
) -> None:
    """Post one Event, or count a repeat on the Event already posted (retried on transient
    errors)."""
    key = series_key(involved, reason, message, event_type)
    series = _series_of(api).get(key)
    if series is not None and await _count_repeat(api, involved, series):
        _remember(api, key, series)
        return
    body = event_body(involved, reason, message, event_type)
    await _create(api, involved, body)
    _remember(api, key, _Series(body["metadata"]["namespace"], body["metadata"]["name"], 1))


async def _count_repeat(api: client.ApiClient, involved: dict[str, str], series: _Series) -> bool:
    """One more occurrence on the series' Event; False when that Event is gone (expired or
    deleted): the caller creates a new one."""
    patch = {"count": series.count + 1, "lastTimestamp": _now()}

    async def send() -> None:
        await client.CoreV1Api(api).patch_namespaced_event(
            series.name, series.namespace, patch, _content_type=MERGE_PATCH
        )

    try:
        await with_retries(
            send, f"count Event on {involved.get('kind')} {involved.get('name')}", attempts=3
        )
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    series.count += 1
    return True


async def _create(api: client.ApiClient, involved: dict[str, str], body: dict[str, Any]) -> None:
    async def create() -> None:
        try:
            await client.CoreV1Api(api).create_namespaced_event(body["metadata"]["namespace"], body)
        except ApiException as error:
            if error.status != 409:  # the name is unique: 409 is an earlier attempt that landed
                raise

    await with_retries(
        create, f"post Event on {involved.get('kind')} {involved.get('name')}", attempts=3
    )
