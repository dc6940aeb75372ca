"""Kopf registrations: thin handlers that hand raw bodies to the controller's memory.

Every handler is ``async``: Kopf runs synchronous handlers in a thread pool, where they would
mutate the engine concurrently and set asyncio events from foreign threads (which does not wake the
event loop: loops would sleep through changes). On the event loop they run one at a time.

Only watching handlers are used (``kopf.index`` and ``kopf.on.event``): they store no state on the
objects, so the operator puts no finalizers and no Kopf annotations on Pods, Nodes or quotas it does
not own. Index handlers see every listed and changed object *before* Kopf lets any other handler
run; the sentinel handler on namespaces therefore fires only once the initial listing of every
indexed kind is in memory, which is when the operator is "synced".
"""

from __future__ import annotations

from typing import Any

import kopf

from elasticquota.controller.state import ControllerState
from elasticquota.kube.quotas import PROFILES, QUOTAS

PODS = ("", "v1", "pods")
NODES = ("", "v1", "nodes")


def register(registry: kopf.OperatorRegistry, state: ControllerState) -> None:
    """Register every handler of the operator into ``registry``."""

    @kopf.index(*QUOTAS, id="quotas", registry=registry)
    async def quota_seen(body: kopf.Body, **_: Any) -> None:
        state.on_quota(dict(body))

    @kopf.on.event(*QUOTAS, id="quota-deleted", registry=registry)
    async def quota_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            state.on_quota_deleted(dict(body))

    @kopf.index(*PROFILES, id="profiles", registry=registry)
    async def profile_seen(body: kopf.Body, **_: Any) -> None:
        state.on_profile(dict(body))

    @kopf.on.event(*PROFILES, id="profile-deleted", registry=registry)
    async def profile_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            state.on_profile_deleted(dict(body))

    @kopf.index(*PODS, id="pods", registry=registry)
    async def pod_seen(body: kopf.Body, **_: Any) -> None:
        state.on_pod(dict(body))

    @kopf.on.event(*PODS, id="pod-deleted", registry=registry)
    async def pod_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            state.on_pod_deleted(dict(body))

    @kopf.index(*NODES, id="nodes", registry=registry)
    async def node_seen(body: kopf.Body, **_: Any) -> None:
        state.on_node(dict(body))

    @kopf.on.event(*NODES, id="node-deleted", registry=registry)
    async def node_event(type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            state.on_node_deleted(dict(body))

    @kopf.on.event("", "v1", "namespaces", id="synced", registry=registry)
    async def sentinel(**_: Any) -> None:
        state.mark_synced()
