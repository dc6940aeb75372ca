"""The big cluster's shape and objects: nodes, a quota tree of depth 4, priority classes and
the pods of a series (see ``bench_scale``)."""

from __future__ import annotations

import datetime
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from elasticquota.core import keys
from elasticquota.kube.quotas import (
    QUOTA_GROUP,
    QUOTA_VERSION,
)

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
