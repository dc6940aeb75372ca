"""What every quota's annotations must be: ``plan`` over a dump of the objects, compared with
the quotas as a watch follows them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import aiohttp

from elasticquota.core import keys
from elasticquota.core.decisions.diff import quota_write
from elasticquota.kube.quotas import (
    PROFILE_GROUP,
    PROFILE_VERSION,
    QUOTA_GROUP,
    QUOTA_VERSION,
)
from elasticquota.plan.compute import Plan, compute_plan
from elasticquota.plan.loader import Manifests
from scalebench.kube import PROFILES_PATH, QUOTAS_PATH, ApiError, Kube
from scalebench.output import say
from scalebench.shape import NAMESPACE


def _typed(items: Iterable[dict[str, Any]], api_version: str, kind: str) -> list[dict[str, Any]]:
    """List items with their kind (lists omit it) and without managedFields (memory)."""
    typed = []
    for item in items:
        (item.get("metadata") or {}).pop("managedFields", None)
        typed.append({"apiVersion": api_version, "kind": kind, **item})
    return typed


async def dump(kube: Kube) -> Manifests:
    """Quotas, profiles, pods, nodes and priority classes as the API server holds them now."""
    quotas, _ = await kube.list_all(QUOTAS_PATH)
    profiles, _ = await kube.list_all(PROFILES_PATH)
    pods, _ = await kube.list_all("/api/v1/pods")
    nodes, _ = await kube.list_all("/api/v1/nodes")
    classes, _ = await kube.list_all("/apis/scheduling.k8s.io/v1/priorityclasses")
    return Manifests(
        quotas=_typed(quotas, f"{QUOTA_GROUP}/{QUOTA_VERSION}", keys.QUOTA_KIND),
        profiles=_typed(profiles, f"{PROFILE_GROUP}/{PROFILE_VERSION}", keys.PROFILE_KIND),
        pods=_typed(pods, "v1", "Pod"),
        nodes=_typed(nodes, "v1", "Node"),
        priority_classes=_typed(classes, "scheduling.k8s.io/v1", "PriorityClass"),
    )


def with_pods(manifests: Manifests, pods: Sequence[dict[str, Any]]) -> Manifests:
    """The same objects plus some pods (as created: plan resolves their priority classes)."""
    return Manifests(
        quotas=manifests.quotas,
        profiles=manifests.profiles,
        pods=[*manifests.pods, *pods],
        nodes=manifests.nodes,
        priority_classes=manifests.priority_classes,
    )


def expected_plan(manifests: Manifests, what: str) -> Plan:
    """``plan`` over the objects; says how long it took and what it found wrong with them."""
    started = time.monotonic()
    plan = compute_plan(manifests)
    say(
        f"plan of {what}: {len(manifests.quotas)} quotas, {len(manifests.pods)} pods, "
        f"{len(manifests.nodes)} nodes in {time.monotonic() - started:.1f} s"
    )
    ours = [f"{p.object}: {p.message}" for p in plan.problems if f" {NAMESPACE}/" in p.object]
    if ours:
        say(f"plan finds {len(ours)} problems with the benchmark's objects, e.g.: {ours[:3]}")
    return plan


def mismatch(plan: Plan, quota: Mapping[str, Any]) -> str | None:
    """How one quota's annotations or ``status.used`` differ from the plan's result (None: they
    do not). A quota the plan has no result for is skipped (as in the integration tests), unless
    it is one of the benchmark's own."""
    metadata = quota["metadata"]
    namespace, name = metadata["namespace"], metadata["name"]
    result = plan.snapshot.quotas.get(name)
    if result is None or result.namespace != namespace:
        return f"{namespace}/{name}: plan has no result for it" if namespace == NAMESPACE else None
    change = quota_write(result, metadata.get("annotations") or {}, quota.get("status"))
    if change.empty:
        return None
    return f"{namespace}/{name}: would write annotations={change.annotations} used={change.used}"


def mismatches(plan: Plan, quotas: Iterable[Mapping[str, Any]], own: int) -> list[str]:
    """Quotas whose annotations or ``status.used`` differ from the plan's results (``mismatch``);
    ``own`` of the benchmark's quotas must have been listed."""
    found, seen = [], 0
    for quota in quotas:
        seen += quota["metadata"]["namespace"] == NAMESPACE
        if (wrong := mismatch(plan, quota)) is not None:
            found.append(wrong)
    if seen < own:
        found.append(f"only {seen} of the benchmark's {own} quotas were listed")
    return found


ObjectKey = tuple[str, str]


def object_key(body: Mapping[str, Any]) -> ObjectKey:
    metadata = body["metadata"]
    return str(metadata.get("namespace", "")), str(metadata["name"])


class QuotaMirror:
    """The quotas as the API server holds them: one list, then a watch that resumes.

    The benchmark checks the operator's writes as they land, from the watch events, instead of
    listing 10,000 quotas again and again: polling that way took half of the API server it
    measures, and so slowed down the very writes being timed. ``dirty`` holds the quotas changed
    since the checker last took them; ``modified`` counts MODIFIED events (the operator's
    writes: every annotation or status patch is one).
    """

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self.quotas: dict[ObjectKey, dict[str, Any]] = {}
        self.dirty: set[ObjectKey] = set()
        self.modified = 0
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        version = await self._relist()
        self._task = asyncio.create_task(self._follow(version), name="quota mirror")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def take_dirty(self) -> set[ObjectKey]:
        self.changed.clear()
        dirty, self.dirty = self.dirty, set()
        return dirty

    async def _relist(self) -> str:
        items, version = await self._kube.list_all(QUOTAS_PATH)
        self.quotas = {object_key(item): item for item in items}
        self.dirty = set(self.quotas)
        self.changed.set()
        return version

    async def _follow(self, version: str) -> None:
        while True:
            params = {
                "watch": "1",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
            timeout = aiohttp.ClientTimeout(total=None, sock_read=330)
            try:
                async with self._kube.session.get(
                    QUOTAS_PATH, params=params, timeout=timeout
                ) as reply:
                    if reply.status == 410:
                        version = await self._relist()
                        continue
                    if reply.status != 200:
                        raise ApiError(reply.status, "WATCH", QUOTAS_PATH, await reply.text())
                    async for line in reply.content:
                        if line.strip():
                            version = await self._apply(json.loads(line), version)
            except (TimeoutError, aiohttp.ClientError):
                await asyncio.sleep(0.5)  # resume from the last version seen

    async def _apply(self, event: Mapping[str, Any], version: str) -> str:
        """One watch event into the mirror; the version to resume from."""
        kind, body = event["type"], event["object"]
        if kind == "ERROR":
            if body.get("code") == 410:
                return await self._relist()
            raise ApiError(int(body.get("code", 0)), "WATCH", QUOTAS_PATH, str(body))
        if kind != "BOOKMARK":
            key = object_key(body)
            if kind == "DELETED":
                self.quotas.pop(key, None)
            else:
                self.quotas[key] = body
            self.modified += kind == "MODIFIED"
            self.dirty.add(key)
            self.changed.set()
        return str(body["metadata"]["resourceVersion"])
