"""Hypothesis strategies for engine-level property tests: random quota trees, pods and nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from elasticquota.core.keys import DEFAULT_QUOTA, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList

RESOURCES = ("cpu", "memory", "gpu")
NAMESPACES = ("team", "ops", "batch")
#: Live pods are the interesting ones: terminal phases are drawn one time in four.
PHASES = ("Pending", "Running", "Running", "Pending", "Running", "Running", "Succeeded", "Failed")


@dataclass
class Cluster:
    quotas: list[Quota] = field(default_factory=list)
    pods: list[PodInfo] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)


def amounts(large: bool, small_limit: int = 60) -> st.SearchStrategy[int]:
    """Small numbers (ties, exact fits) and, when ``large``, values near the int64 limits."""
    small = st.integers(0, small_limit)
    if not large:
        return small
    return st.one_of(small, st.integers(0, 2**62 - 1), st.integers(2**40, 2**50))


def resource_lists(
    keys: st.SearchStrategy[frozenset[str]] | None = None,
    large: bool = False,
    small_limit: int = 60,
) -> st.SearchStrategy[ResourceList]:
    key_sets = keys if keys is not None else st.frozensets(st.sampled_from(RESOURCES))
    return key_sets.flatmap(
        lambda chosen: st.fixed_dictionaries(
            {key: amounts(large, small_limit) for key in sorted(chosen)}
        )
    )


@st.composite
def min_max(draw: st.DrawFn, large: bool = False) -> tuple[ResourceList, ResourceList]:
    """A valid (min, max): min keys ⊆ max keys, min ≤ max."""
    maximum = draw(resource_lists(st.frozensets(st.sampled_from(RESOURCES), min_size=1), large))
    minimum = {}
    for key, value in maximum.items():
        if draw(st.booleans()):
            minimum[key] = draw(st.integers(0, value))
    return minimum, maximum


@st.composite
def optional_limit(draw: st.DrawFn, keys: list[str]) -> ResourceList | None:
    if draw(st.integers(0, 3)) != 0:  # a limit on one quota in four
        return None
    return {key: draw(st.integers(0, 40)) for key in keys if draw(st.booleans())}


@st.composite
def valid_trees(draw: st.DrawFn, max_quotas: int = 7, large: bool = False) -> list[Quota]:
    """A sound default tree: parents before children, is-parent set where there are children."""
    count = draw(st.integers(1, max_quotas))
    names = [f"q{index}" for index in range(count)]
    parents = [ROOT_QUOTA]
    for index in range(1, count):
        parents.append(draw(st.sampled_from([ROOT_QUOTA, *names[:index]])))
    has_children = {parent for parent in parents if parent != ROOT_QUOTA}
    specs = []
    for name, parent in zip(names, parents, strict=True):
        minimum, maximum = draw(min_max(large))
        weight = draw(st.one_of(st.none(), resource_lists(large=large)))
        specs.append(
            Quota(
                name=name,
                namespace=draw(st.sampled_from(NAMESPACES)),
                min=minimum,
                max=maximum,
                parent=parent,
                is_parent=name in has_children,
                allow_lent=draw(st.booleans()),
                shared_weight=weight,
                lending_limit=draw(optional_limit(sorted(maximum))),
                borrowing_limit=draw(optional_limit(sorted(maximum))),
            )
        )
    return specs


@st.composite
def one_pod(draw: st.DrawFn, name: str, labels: list[str], large: bool = False) -> PodInfo:
    """A pod with a random label (known quota, reserved, unknown or none), request and state."""
    return PodInfo(
        namespace=draw(st.sampled_from(NAMESPACES)),
        name=name,
        requests=draw(resource_lists(large=large, small_limit=20)),
        quota_label=draw(
            st.one_of(
                st.sampled_from(labels) if labels else st.nothing(),
                st.sampled_from(labels) if labels else st.nothing(),
                st.sampled_from(["", "ghost", SYSTEM_QUOTA, DEFAULT_QUOTA]),
            )
        ),
        preemptible=draw(st.booleans()),
        phase=draw(st.sampled_from(PHASES)),
        node_name=draw(st.sampled_from(["", "n0", "n1"])),
    )


@st.composite
def pods_for(
    draw: st.DrawFn, labels: list[str], max_pods: int = 15, large: bool = False
) -> list[PodInfo]:
    count = draw(st.integers(0, max_pods))
    return [draw(one_pod(f"p{index}", labels, large)) for index in range(count)]


@st.composite
def nodes(draw: st.DrawFn, large: bool = False) -> list[NodeInfo]:
    count = draw(st.integers(0, 3))
    return [NodeInfo(f"n{index}", draw(resource_lists(large=large))) for index in range(count)]


@st.composite
def clusters(draw: st.DrawFn, max_quotas: int = 7, large: bool = False) -> Cluster:
    quotas = draw(valid_trees(max_quotas, large))
    pods = draw(pods_for([spec.name for spec in quotas], large=large))
    return Cluster(quotas, pods, draw(nodes(large)))


# -- arbitrary specs for event sequences (broken topologies included) ----------------------------

QUOTA_NAMES = ("a", "b", "c", "d")


@st.composite
def any_quota(draw: st.DrawFn) -> Quota:
    """Any quota of a small name space: missing parents, cycles, duplicates, trees all happen;
    sometimes it is the system or default quota, given explicitly."""
    minimum, maximum = draw(min_max())
    tree_id = draw(st.sampled_from(["", "", "", "t"]))
    is_root = tree_id == "t" and draw(st.booleans())
    return Quota(
        name=draw(st.sampled_from([*QUOTA_NAMES, *QUOTA_NAMES, SYSTEM_QUOTA, DEFAULT_QUOTA])),
        namespace=draw(st.sampled_from(NAMESPACES[:2])),
        min=minimum,
        max=maximum,
        parent=draw(st.sampled_from([ROOT_QUOTA, ROOT_QUOTA, *QUOTA_NAMES, "ghost"])),
        is_parent=draw(st.booleans()),
        allow_lent=draw(st.booleans()),
        tree_id=tree_id,
        is_root=is_root,
        ignore_default_tree=draw(st.booleans()),
        shared_weight=draw(st.one_of(st.none(), resource_lists())),
        namespaces=tuple(draw(st.lists(st.sampled_from(NAMESPACES), max_size=2))),
        total_resource=draw(resource_lists()) if tree_id == "t" else None,
        lending_limit=draw(optional_limit(sorted(maximum))),
        borrowing_limit=draw(optional_limit(sorted(maximum))),
        created=draw(st.sampled_from(["", "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"])),
    )


def any_pod() -> st.SearchStrategy[PodInfo]:
    """One of a few pod names, so that later events update or delete earlier pods."""
    return st.sampled_from(["p0", "p1", "p2", "p3"]).flatmap(
        lambda name: one_pod(name, [*QUOTA_NAMES])
    )


def any_node() -> st.SearchStrategy[NodeInfo]:
    return st.builds(NodeInfo, st.sampled_from(["n0", "n1", "n2"]), resource_lists())
