"""A raw JSON client of the API server, fast enough to create 100,000 pods (the generated client's
model handling costs more CPU per request than the API server itself), and a pool that runs
requests a given number at a time."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import aiohttp

from elasticquota.core import keys
from elasticquota.kube.quotas import (
    MERGE_PATCH,
    PROFILE_GROUP,
    PROFILE_PLURAL,
    PROFILE_VERSION,
    QUOTA_GROUP,
    QUOTA_PLURAL,
    QUOTA_VERSION,
)
from scalebench.output import say
from scalebench.shape import NAMESPACE, PodPlan, running_status

QUOTAS_PATH = f"/apis/{QUOTA_GROUP}/{QUOTA_VERSION}/{QUOTA_PLURAL}"
PROFILES_PATH = f"/apis/{PROFILE_GROUP}/{PROFILE_VERSION}/{PROFILE_PLURAL}"
JSON = "application/json"
RETRIED_STATUSES = (429, 500, 502, 503, 504)
REQUEST_ATTEMPTS = 8
REQUEST_TIMEOUT = 120.0
LIST_PAGE = 2000
PROGRESS_EVERY = 5.0
_T = TypeVar("_T")


class ApiError(RuntimeError):
    def __init__(self, status: int, method: str, path: str, text: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {text[:300]}")
        self.status = status


class Kube:
    """JSON over one aiohttp session to the API server, retried on throttling and 5xx."""

    def __init__(self, server: str, token: str, ca_file: str, connections: int) -> None:
        context = ssl.create_default_context(cafile=ca_file)
        self.session = aiohttp.ClientSession(
            base_url=server,
            connector=aiohttp.TCPConnector(limit=connections, ssl=context),
            headers={"Authorization": f"Bearer {token}"},
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
        )
        self.requests = 0

    async def close(self) -> None:
        await self.session.close()

    async def call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        content_type: str = JSON,
        params: Mapping[str, str] | None = None,
        conflict_ok: bool = False,
        missing_ok: bool = False,
    ) -> Any:
        """The decoded answer; None for 409 with ``conflict_ok`` or 404 with ``missing_ok``."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        for attempt in range(REQUEST_ATTEMPTS):
            self.requests += 1
            try:
                async with self.session.request(
                    method, path, data=data, headers=headers, params=params
                ) as reply:
                    text = await reply.text()
                    if reply.status < 300:
                        return json.loads(text) if text else None
                    if (reply.status == 409 and conflict_ok) or (
                        reply.status == 404 and missing_ok
                    ):
                        return None
                    if reply.status not in RETRIED_STATUSES or attempt == REQUEST_ATTEMPTS - 1:
                        raise ApiError(reply.status, method, path, text)
            except (TimeoutError, aiohttp.ClientConnectionError):
                if attempt == REQUEST_ATTEMPTS - 1:
                    raise
            await asyncio.sleep(min(0.2 * 2**attempt, 5.0))
        raise AssertionError("unreachable")

    async def text(self, path: str) -> str:
        """The plain-text answer to a GET (the API server's ``/metrics``)."""
        async with self.session.get(path) as reply:
            if reply.status >= 300:
                raise ApiError(reply.status, "GET", path, await reply.text())
            return await reply.text()

    async def list_all(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection (paged), and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params = {"limit": str(LIST_PAGE)}
        while True:
            page = await self.call("GET", path, params=params)
            items.extend(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                return items, str(page["metadata"].get("resourceVersion", ""))
            params = {"limit": str(LIST_PAGE), "continue": token}

    async def get_quota(self, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        path = f"/apis/{QUOTA_GROUP}/{QUOTA_VERSION}/namespaces/{namespace}/{QUOTA_PLURAL}/{name}"
        quota: dict[str, Any] = await self.call("GET", path)
        return quota

    async def create(self, manifest: Mapping[str, Any]) -> None:
        """Create one object of the kinds this benchmark makes (an existing one is left alone)."""
        kind, meta = manifest["kind"], manifest["metadata"]
        if kind == "Namespace":
            path = "/api/v1/namespaces"
        elif kind == "PriorityClass":
            path = "/apis/scheduling.k8s.io/v1/priorityclasses"
        elif kind == "Node":
            body = {k: v for k, v in manifest.items() if k != "status"}
            await self.call("POST", "/api/v1/nodes", body, conflict_ok=True)
            status = {"status": manifest["status"]}
            await self.call(
                "PATCH", f"/api/v1/nodes/{meta['name']}/status", status, content_type=MERGE_PATCH
            )
            return
        elif kind == "Pod":
            path = f"/api/v1/namespaces/{meta['namespace']}/pods"
        elif kind == keys.QUOTA_KIND:
            path = f"/apis/{QUOTA_GROUP}/{QUOTA_VERSION}/namespaces/{meta['namespace']}/"
            path += QUOTA_PLURAL
        else:
            raise ValueError(f"cannot create kind {kind!r}")
        await self.call("POST", path, manifest, conflict_ok=True)

    async def create_pod(self, pod: PodPlan) -> None:
        """Create the pod; a bound one is then marked Running through ``pods/status``."""
        await self.create(pod.manifest)
        if pod.bound:
            path = f"/api/v1/namespaces/{NAMESPACE}/pods/{pod.name}/status"
            await self.call("PATCH", path, running_status(), content_type=MERGE_PATCH)

    async def delete_pod(self, name: str) -> None:
        await self.call("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", missing_ok=True)


async def run_pool(
    items: Iterable[_T],
    work: Callable[[_T], Awaitable[None]],
    concurrency: int,
    total: int,
    what: str,
) -> float:
    """Run ``work`` on every item, ``concurrency`` at a time (progress on stderr); seconds taken."""
    iterator = iter(items)
    done = [0]
    started = time.monotonic()

    async def worker() -> None:
        for item in iterator:  # shared: each item is taken by exactly one worker
            await work(item)
            done[0] += 1

    async def progress() -> None:
        while True:
            await asyncio.sleep(PROGRESS_EVERY)
            elapsed = time.monotonic() - started
            say(f"{what}: {done[0]}/{total} in {elapsed:.0f} s ({done[0] / elapsed:.0f}/s)")

    reporter = asyncio.create_task(progress())
    try:
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:
        reporter.cancel()
    return time.monotonic() - started
