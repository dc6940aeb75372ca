"""Pod writes: admission gates and conditions. Evictions are in ``kube.evictions``; what a
scheduler and a kubelet do (the demo's node simulation) is development tooling
(``devtools/eqdev/kubelet.py``).

A gate release is a JSON patch (RFC 6902) that first tests ``/metadata/creationTimestamp``: the
creation time of the pod the decision was about. A pod deleted and recreated under the same name
since then (a StatefulSet's) fails the test, and the API server refuses the whole patch (422; a
merge patch has no such precondition): that pod is not released, and neither is a pod that is
gone (404).

The waiting condition is a strategic merge patch of the pod's status (merged by condition type, so
the others stay; a JSON patch could only replace a list entry by its index). Given the creation
time of the pod decided about, the pod is read first (``uid_if_created_at``, as before an
eviction): another pod under the name gets nothing, and the patch carries the uid read, which the
API server refuses for any other pod (422: ``metadata.uid`` is immutable; a ``creationTimestamp``
in a patch would be silently ignored), so a pod recreated between the read and the write gets
nothing either. The uid is the answer: the Event that tells the pod why it waits names it, so that
``kubectl describe pod`` (whose field selector names the pod's uid) lists it.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.core.keys import ADMISSION_CONDITION
from elasticquota.kube.errors import (
    START_UP_ATTEMPTS,
    describe,
    raise_for_status,
    read_json,
    with_retries,
)

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"

logger = logging.getLogger(__name__)


def gates_patch(gates: list[str], created: str = "") -> list[dict[str, Any]]:
    """The JSON patch that sets the pod's gates to ``gates`` (``add`` replaces the list, or sets it
    where it is absent), after a ``test`` that the pod is the one created at ``created`` (none: no
    test)."""
    value = [{"name": gate} for gate in gates]
    test = [{"op": "test", "path": "/metadata/creationTimestamp", "value": created}]
    return [
        *(test if created else []),
        {"op": "add", "path": "/spec/schedulingGates", "value": value},
    ]


def _not_this_pod(error: ApiException, guard: str) -> bool:
    """The pod is gone (404), or another pod has its name: the write named the pod by ``guard``
    (its creation time, its uid) and the API server refused it (422; 409 too)."""
    return error.status == 404 or (bool(guard) and error.status in (409, 422))


async def set_scheduling_gates(
    api: client.ApiClient, namespace: str, name: str, gates: list[str], created: str = ""
) -> bool:
    """Replace the pod's scheduling gates (the API only lets gates be removed), of the pod created
    at ``created`` if given: True when written; False when that pod is not there
    (``_not_this_pod``: not retried, nothing to release)."""

    async def send() -> bool:
        try:
            # Read raw: the answer (the whole pod) is not needed, only its status.
            response = await client.CoreV1Api(api).patch_namespaced_pod(
                name,
                namespace,
                gates_patch(gates, created),
                _content_type=JSON_PATCH,
                _preload_content=False,
            )
            await raise_for_status(response)
        except ApiException as error:
            if not _not_this_pod(error, created):
                raise
            logger.info(
                "Pod %s/%s not released: gone, or another pod has its name (%s)",
                namespace,
                name,
                describe(error),
            )
            return False
        return True

    return await with_retries(send, f"release Pod {namespace}/{name}", attempts=3)


def waiting_condition(waiting: bool, message: str) -> dict[str, str]:
    """The pod condition that says whether (and why) it waits for its quota."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": ADMISSION_CONDITION,
        "status": "False" if waiting else "True",
        "reason": "QuotaExceeded" if waiting else "Admitted",
        "message": message[:1024],
        "lastTransitionTime": now,
    }


async def set_waiting_condition(
    api: client.ApiClient,
    namespace: str,
    name: str,
    waiting: bool,
    message: str,
    created: str = "",
) -> str | None:
    """Write the pod's ``waiting_condition``, of the pod created at ``created`` if given: the uid
    of the pod written (``""`` without ``created``: not read); None when that pod is not there
    (gone, or another pod has its name: not retried, nothing written)."""
    patch: dict[str, Any] = {"status": {"conditions": [waiting_condition(waiting, message)]}}
    uid = ""
    if created:
        found = await uid_if_created_at(api, namespace, name, created, "given its condition")
        if found is None:
            return None
        uid = found
        patch["metadata"] = {"uid": uid}

    async def send() -> str | None:
        try:
            await client.CoreV1Api(api).patch_namespaced_pod_status(
                name, namespace, patch, _content_type=STRATEGIC_MERGE
            )
        except ApiException as error:
            if not _not_this_pod(error, uid):
                raise
            logger.info(
                "Pod %s/%s not given its condition: gone, or another pod has its name (%s)",
                namespace,
                name,
                describe(error),
            )
            return None
        return uid

    return await with_retries(
        send, f"set the admission condition of Pod {namespace}/{name}", attempts=3
    )


async def uid_if_created_at(
    api: client.ApiClient, namespace: str, name: str, created: str, action: str
) -> str | None:
    """The uid of the pod of that name if it is the one created at ``created`` (one GET, transient
    failures retried); None when it is gone or another pod has the name (logged as not
    ``action``)."""

    async def read() -> Any:
        response = await client.CoreV1Api(api).read_namespaced_pod(
            name, namespace, _preload_content=False
        )
        return await read_json(response)

    try:
        pod = await with_retries(read, f"read Pod {namespace}/{name}", attempts=3)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    metadata = pod.get("metadata") if isinstance(pod, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    if metadata.get("creationTimestamp") != created:
        logger.info("Pod %s/%s not %s: another pod has its name", namespace, name, action)
        return None
    uid = metadata.get("uid")
    return uid if isinstance(uid, str) else ""


def gates_supported(major: str, minor: str) -> bool:
    """Kubernetes 1.27+ keeps ``spec.schedulingGates`` (minor versions may read like ``27+``)."""

    def number(text: str) -> int:
        digits = "".join(ch for ch in text if ch.isdigit())
        return int(digits) if digits else 0

    return (number(major), number(minor)) >= (1, 27)


async def supports_scheduling_gates(api: client.ApiClient) -> tuple[bool, str]:
    """Whether the API server keeps pod scheduling gates, and its version (``GET /version``,
    transient failures retried: a start-up step, ``START_UP_ATTEMPTS``)."""
    version = await with_retries(
        client.VersionApi(api).get_code, "read the API server's version", START_UP_ATTEMPTS
    )
    return gates_supported(version.major, version.minor), str(version.git_version)
