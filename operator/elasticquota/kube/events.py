"""Kubernetes Events: how the operator tells users about a broken object, on the object itself."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.errors import with_retries

COMPONENT = "elastic-quota-operator"


def event_body(
    involved: dict[str, str], reason: str, message: str, event_type: str = "Warning"
) -> dict[str, Any]:
    """A core/v1 Event about ``involved`` (apiVersion, kind, namespace, name, uid)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    namespace = involved.get("namespace") or "default"
    return {
        "metadata": {
            "name": f"{involved['name']}.{uuid.uuid4().hex[:12]}",
            "namespace": namespace,
        },
        "involvedObject": involved,
        "reason": reason,
        "message": message[:1024],
        "type": event_type,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


async def post_event(
    api: client.ApiClient,
    involved: dict[str, str],
    reason: str,
    message: str,
    event_type: str = "Warning",
) -> None:
    """Post one Event (retried on transient errors)."""
    body = event_body(involved, reason, message, event_type)

    async def create() -> None:
        try:
            await client.CoreV1Api(api).create_namespaced_event(body["metadata"]["namespace"], body)
        except ApiException as error:
            if error.status != 409:  # the name is unique: 409 is an earlier attempt that landed
                raise

    await with_retries(
        create, f"post Event on {involved.get('kind')} {involved.get('name')}", attempts=3
    )
