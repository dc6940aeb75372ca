"""The big cluster of ``bench_scale``: its objects, a raw API client fast enough to create them, and
the ``plan`` oracle that says what every quota's annotations must be.

The shape (every count follows ``--quotas``, ``--nodes`` and the pod counts):

* nodes with 64 cores, 256Gi, 1Ti ephemeral storage; every other node has 8 ``nvidia.com/gpu``;
* a quota tree of depth 4: ``quotas/1000`` top-level parents, ``quotas/100`` and ``quotas/10``
  parents below them and the rest leaves (10,000 quotas: 10 -> 100 -> 1,000 -> 8,890), children
  spread round-robin over the level above. Each top-level subtree has one set of 2-4 resources
  among cpu, memory, ephemeral-storage and nvidia.com/gpu (the webhook's rule: identical max keys
  along every edge); every child's min is 80 % of its parent's split evenly, so the tree is valid.
  Every 7th quota has a ``shared-weight`` annotation, every 11th does not lend
  (``allow-lent-resource: "false"``);
* pods spread round-robin over the leaves, small (50m-250m cpu, 64Mi-512Mi), some with
  ephemeral storage or a GPU where their quota has it; 3 in 5 are bound (``spec.nodeName``, then
  phase Running through the status subresource, as a kubelet would), the others pending; four
  PriorityClasses (0-1,000) and pods without one; the critical ones are non-preemptible. The
  cluster stays far from full, so that no quota uses more than its runtime and revocation (on, as
  by default) never evicts anything: the objects do not move under the measurement.

Objects go through :class:`Kube`, a thin aiohttp client (bearer token, the cluster's CA, a
connection pool of ``--concurrency``) rather than the generated client, whose model handling costs
more CPU per request than the API server itself at these counts. "Correct" is what
``elasticquota.plan.compute_plan`` computes for the objects the API server holds, compared with
``core.decisions.diff.quota_write`` exactly as the integration tests do: a quota is correct when the
operator would write nothing to it (annotations and ``status.used``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import json
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp

from elasticquota.core import keys
from elasticquota.core.decisions.diff import quota_write
from elasticquota.kube.quotas import (
    MERGE_PATCH,
    PROFILE_GROUP,
    PROFILE_PLURAL,
    PROFILE_VERSION,
    QUOTA_GROUP,
    QUOTA_PLURAL,
    QUOTA_VERSION,
)
from elasticquota.plan.compute import Plan, compute_plan
from elasticquota.plan.loader import Manifests

NAMESPACE = "scale"
MI = 1024**2
GI = 1024**3
TI = 1024**4
GPU = "nvidia.com/gpu"
EPHEMERAL = "ephemeral-storage"
BYTE_KEYS = ("memory", EPHEMERAL)
NODE_CAPACITY = {"cpu": 64_000, "memory": 256 * GI, EPHEMERAL: TI}
NODE_GPUS = 8
#: The max of every leaf (engine units: millicores, bytes, devices): far above what its pods ask.
LEAF_MAX = {"cpu": 64_000, "memory": 256 * GI, EPHEMERAL: TI, GPU: 8}
RESOURCE_SETS: tuple[tuple[str, ...], ...] = (
    ("cpu", "memory"),
    ("cpu", "memory", GPU),
    ("cpu", "memory", EPHEMERAL),
    ("cpu", "memory", GPU, EPHEMERAL),
)
MIN_SHARE = 0.8  # of the parent's min (of the cluster total at the top), split among siblings
SHARED_WEIGHT_EVERY = 7
NON_LENDING_EVERY = 11
PRIORITY_CLASSES = {"scale-critical": 1000, "scale-high": 100, "scale-standard": 10}
PRIORITY_CLASSES["scale-batch"] = 0
CPU_CHOICES = ("50m", "100m", "200m", "250m")
MEMORY_CHOICES = ("64Mi", "128Mi", "256Mi", "512Mi")
GPU_POD_EVERY = 50
EPHEMERAL_POD_EVERY = 3
BOUND_OUT_OF_5 = 3

QUOTAS_PATH = f"/apis/{QUOTA_GROUP}/{QUOTA_VERSION}/{QUOTA_PLURAL}"
PROFILES_PATH = f"/apis/{PROFILE_GROUP}/{PROFILE_VERSION}/{PROFILE_PLURAL}"
JSON = "application/json"
RETRIED_STATUSES = (429, 500, 502, 503, 504)
REQUEST_ATTEMPTS = 8
REQUEST_TIMEOUT = 120.0
LIST_PAGE = 2000
PROGRESS_EVERY = 5.0
_T = TypeVar("_T")


def say(message: str) -> None:
    """Progress, on stderr (the figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the shape -------------------------------------------------------------------------------------


def level_sizes(quotas: int) -> tuple[int, int, int, int]:
    """Quotas per level, top first: 10,000 -> (10, 100, 1000, 8890)."""
    if quotas < 4:
        raise ValueError("a tree of depth 4 needs at least 4 quotas")
    first = max(1, quotas // 1000)
    second = max(first, quotas // 100)
    third = max(second, quotas // 10)
    return first, second, third, quotas - first - second - third


def cluster_total(nodes: int) -> dict[str, int]:
    """What the nodes offer, in engine units."""
    total = {key: value * nodes for key, value in NODE_CAPACITY.items()}
    total[GPU] = NODE_GPUS * ((nodes + 1) // 2)
    return total


def quantity(key: str, units: int) -> str:
    """Engine units as a Kubernetes quantity (bytes are rounded down to whole Mi)."""
    if key == "cpu":
        return f"{units}m"
    if key in BYTE_KEYS:
        return f"{units // MI}Mi"
    return str(units)


def _floor(key: str, units: int) -> int:
    """What ``quantity`` keeps of ``units``: children are computed from what their parent has."""
    return units - units % MI if key in BYTE_KEYS else units


def _weight(key: str, units: int) -> str:
    smallest = MI if key in BYTE_KEYS else 1
    return quantity(key, max(2 * units, smallest))


@dataclass(slots=True)
class QuotaNode:
    name: str
    parent: str | None
    keys: tuple[str, ...]
    min: dict[str, int]
    #: False: ``allow-lent-resource: "false"`` (its request annotation is at least its min, so a
    #: small pod change may not show in it).
    lends: bool = True
    children: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ClusterShape:
    """Every quota of the tree (top-down), the leaves, the node names and the cluster total."""

    nodes: list[str]
    total: dict[str, int]
    quotas: dict[str, QuotaNode]
    leaves: list[str]

    def lending_leaves(self) -> list[str]:
        """Leaves whose request annotation moves with every pod change."""
        return [name for name in self.leaves if self.quotas[name].lends]

    def ancestors(self, name: str) -> list[str]:
        chain, parent = [], self.quotas[name].parent
        while parent is not None:
            chain.append(parent)
            parent = self.quotas[parent].parent
        return chain


def build_shape(quotas: int, nodes: int) -> ClusterShape:
    """The tree: evenly split mins (valid: children's mins fit in their parent's)."""
    total = cluster_total(nodes)
    sizes = level_sizes(quotas)
    names = [
        [f"{prefix}-{index:05d}" for index in range(count)]
        for prefix, count in zip(("dept", "div", "team", "leaf"), sizes, strict=True)
    ]
    tree: dict[str, QuotaNode] = {}
    for index, name in enumerate(names[0]):
        resources = RESOURCE_SETS[index % len(RESOURCE_SETS)]
        tree[name] = QuotaNode(name, None, resources, {})
    for upper, lower in itertools.pairwise(names):
        for index, name in enumerate(lower):
            parent = tree[upper[index % len(upper)]]
            parent.children.append(name)
            tree[name] = QuotaNode(name, parent.name, parent.keys, {})
    for name in names[0]:
        node = tree[name]
        node.min = {k: _floor(k, int(total[k] * MIN_SHARE) // len(names[0])) for k in node.keys}
    for level in names[:-1]:
        for name in level:
            node = tree[name]
            for child in node.children:
                tree[child].min = {
                    k: _floor(k, int(node.min[k] * MIN_SHARE) // len(node.children))
                    for k in node.keys
                }
    for position, node in enumerate(tree.values()):
        node.lends = position % NON_LENDING_EVERY != NON_LENDING_EVERY - 1
    node_names = [f"scale-node-{index:05d}" for index in range(nodes)]
    return ClusterShape(node_names, total, tree, names[-1])


def quota_manifests(shape: ClusterShape) -> list[dict[str, Any]]:
    manifests = []
    for position, node in enumerate(shape.quotas.values()):
        is_parent = bool(node.children)
        labels = {keys.LABEL_PARENT: node.parent} if node.parent else {}
        if is_parent:
            labels[keys.LABEL_IS_PARENT] = "true"
        if not node.lends:
            labels[keys.LABEL_ALLOW_LENT] = "false"
        annotations = {}
        if position % SHARED_WEIGHT_EVERY == SHARED_WEIGHT_EVERY - 1:
            weight = {k: _weight(k, node.min[k]) for k in node.keys}
            annotations[keys.ANNO_SHARED_WEIGHT] = json.dumps(weight, separators=(",", ":"))
        maximum = {
            k: shape.total[k] if is_parent else max(LEAF_MAX[k], node.min[k]) for k in node.keys
        }
        manifests.append(
            {
                "apiVersion": f"{QUOTA_GROUP}/{QUOTA_VERSION}",
                "kind": keys.QUOTA_KIND,
                "metadata": {
                    "name": node.name,
                    "namespace": NAMESPACE,
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": {
                    "min": {k: quantity(k, v) for k, v in node.min.items()},
                    "max": {k: quantity(k, v) for k, v in maximum.items()},
                },
            }
        )
    return manifests


def node_manifest(name: str, index: int) -> dict[str, Any]:
    allocatable = {k: quantity(k, v) for k, v in NODE_CAPACITY.items()} | {"pods": "110"}
    if index % 2 == 0:
        allocatable[GPU] = str(NODE_GPUS)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"pool": "scale"}},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def priority_class_manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


@dataclass(frozen=True, slots=True)
class PodPlan:
    """One pod to create, and whether it is then bound and Running."""

    manifest: dict[str, Any]
    bound: bool

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])


def pod_plan(
    shape: ClusterShape, prefix: str, index: int, *, pending: bool = False, leaf: str | None = None
) -> PodPlan:
    """Pod ``index`` of a series: its leaf, requests, priority class and node follow the index."""
    leaf = leaf or shape.leaves[index % len(shape.leaves)]
    resources = shape.quotas[leaf].keys
    requests = {
        "cpu": CPU_CHOICES[index % len(CPU_CHOICES)],
        "memory": MEMORY_CHOICES[(index // len(CPU_CHOICES)) % len(MEMORY_CHOICES)],
    }
    if GPU in resources and index % GPU_POD_EVERY == 0:
        requests[GPU] = "1"
    if EPHEMERAL in resources and index % EPHEMERAL_POD_EVERY == 0:
        requests[EPHEMERAL] = "1Gi"
    container: dict[str, Any] = {"name": "main", "image": "app:1", "resources": {}}
    container["resources"] = {"requests": requests}
    if GPU in requests:
        container["resources"]["limits"] = {GPU: requests[GPU]}  # extended resources need both
    labels = {keys.POD_LABEL_QUOTA: leaf}
    spec: dict[str, Any] = {"containers": [container]}
    classes = list(PRIORITY_CLASSES)
    choice = index % (len(classes) + 1)
    if choice:
        spec["priorityClassName"] = classes[choice - 1]
        if choice == 1:
            labels[keys.POD_LABEL_PREEMPTIBLE] = "false"
    bound = not pending and index % 5 < BOUND_OUT_OF_5
    if bound:
        spec["nodeName"] = shape.nodes[index % len(shape.nodes)]
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{index:06d}", "namespace": NAMESPACE, "labels": labels},
        "spec": spec,
    }
    return PodPlan(manifest, bound)


def running_status() -> dict[str, Any]:
    """What a kubelet reports once the containers run (``eqdev.kubelet.mark_running``)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "status": {
            "phase": "Running",
            "startTime": now,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
        }
    }


# -- the raw client --------------------------------------------------------------------------------


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


# -- the oracle ------------------------------------------------------------------------------------


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
