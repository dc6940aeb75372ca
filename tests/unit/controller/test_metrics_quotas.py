"""The gauges read at scrape time: per-quota figures from the latest solve, and the replica's state.

Rules (controller/metrics/collectors.py): cpu in cores, memory in bytes; an unset figure and the
operator's "no limit" sentinels have no series; a deleted quota is gone at the next scrape; only the
active replica shows per-quota figures and gated pods.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import prometheus_client
import pytest

from elasticquota import __version__
from elasticquota.controller.metrics import METRIC_NAMES, Metrics
from elasticquota.controller.metrics.collectors import display_value
from elasticquota.controller.metrics.names import resource_unit
from elasticquota.controller.reconcile.reconciler import TreeLoop
from elasticquota.controller.reconcile.writer import Writer
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

GIB = 2**30
SYSTEM_NAMESPACE = "koordinator-system"


def figure(metrics: Metrics, name: str, quota: str, resource: str) -> float | None:
    """One per-quota sample, whatever its other labels (None: no series)."""
    for family in metrics.registry.collect():
        for sample in family.samples:
            labels = sample.labels
            if sample.name == name and (labels["quota"], labels["resource"]) == (quota, resource):
                return sample.value
    return None


def quota_samples(metrics: Metrics) -> list[str]:
    return [
        sample.labels["quota"]
        for family in metrics.registry.collect()
        if family.name == "elastic_quota_runtime"
        for sample in family.samples
    ]


@pytest.fixture
def world(state: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """A parent with two leaves on one 8-cpu node, a running pod in team-a, the system quota."""
    reserved_max = {"cpu": str(keys.RESERVED_GROUP_MAX), "memory": str(keys.RESERVED_GROUP_MAX)}
    state.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi"}))
    for body in (
        k8s.quota("dept", min={"cpu": "4"}, max={"cpu": "8", "memory": "16Gi"}, is_parent=True),
        k8s.quota("team-a", min={"cpu": "2"}, max={"cpu": "8", "memory": "8Gi"}, parent="dept"),
        k8s.quota("team-b", min={"cpu": "500m"}, max={"cpu": "8"}, parent="dept"),
        k8s.quota(keys.SYSTEM_QUOTA, SYSTEM_NAMESPACE, max=reserved_max, parent=keys.ROOT_QUOTA),
    ):
        cluster.store(body)
        state.on_quota(body)
    requests = {"cpu": "1500m", "memory": "1Gi"}
    state.on_pod(k8s.pod("p", quota="team-a", requests=requests, node="n1", phase="Running"))
    state.mark_synced()
    return state


@pytest.fixture
def tree_loop(
    world: ControllerState,
    cluster: FakeCluster,
    make_settings: Callable[..., Settings],
    leading: asyncio.Event,
    metrics: Metrics,
) -> TreeLoop:
    settings = make_settings()
    writer = Writer(cluster, world, settings)
    return TreeLoop("", world, writer, 1.0, leading, lambda: None, metrics)


async def test_figures_are_in_cores_and_bytes(tree_loop: TreeLoop, metrics: Metrics) -> None:
    await tree_loop.reconcile_once()
    assert figure(metrics, "elastic_quota_min", "team-b", "cpu") == 0.5
    assert figure(metrics, "elastic_quota_max", "team-a", "memory") == 8 * GIB
    assert figure(metrics, "elastic_quota_used", "team-a", "cpu") == 1.5
    assert figure(metrics, "elastic_quota_used", "team-a", "memory") == GIB
    assert figure(metrics, "elastic_quota_request", "dept", "cpu") == 1.5
    assert figure(metrics, "elastic_quota_limited_request", "team-a", "cpu") == 1.5
    assert figure(metrics, "elastic_quota_runtime", "team-a", "cpu") == 1.5
    assert figure(metrics, "elastic_quota_effective_min", "dept", "cpu") == 4.0
    sample = metrics.registry.get_sample_value(
        "elastic_quota_runtime",
        {
            "tree": "", "quota": "team-a", "namespace": "team", "parent": "dept",
            "resource": "cpu", "unit": "cores",
        },
    )  # fmt: skip
    assert sample == 1.5


def units(metrics: Metrics, name: str, quota: str) -> dict[str, str]:
    """resource -> the ``unit`` label of the quota's series of ``name``."""
    return {
        sample.labels["resource"]: sample.labels["unit"]
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == name and sample.labels["quota"] == quota
    }


async def test_each_series_states_its_unit(tree_loop: TreeLoop, metrics: Metrics) -> None:
    await tree_loop.reconcile_once()
    assert units(metrics, "elastic_quota_used", "team-a") == {"cpu": "cores", "memory": "bytes"}
    assert units(metrics, "elastic_quota_max", "dept") == {"cpu": "cores", "memory": "bytes"}


def test_resource_units() -> None:
    assert resource_unit("cpu") == "cores"
    for resource in ("memory", "ephemeral-storage", "hugepages-2Mi"):
        assert resource_unit(resource) == "bytes", resource
    for resource in ("nvidia.com/gpu", "pods", "kubernetes.io/batch-cpu"):
        assert resource_unit(resource) == "units", resource


def tree_names(metrics: Metrics) -> dict[str, str]:
    return {
        sample.labels["tree"]: sample.labels["tree_name"]
        for family in metrics.registry.collect()
        if family.name == "elastic_quota_tree_info"
        for sample in family.samples
        if sample.value == 1
    }


async def test_tree_info_names_the_default_tree(tree_loop: TreeLoop, metrics: Metrics) -> None:
    assert tree_names(metrics) == {}  # nothing solved yet
    await tree_loop.reconcile_once()
    assert tree_names(metrics) == {"": "default"}


async def test_tree_info_names_a_profile_tree_by_its_profile(
    state: ControllerState,
    cluster: FakeCluster,
    k8s: Bodies,
    make_settings: Callable[..., Settings],
    leading: asyncio.Event,
    metrics: Metrics,
) -> None:
    """The tree label holds the profile tree's id (a hash); tree_info maps it to the profile's
    name, from the root quota's labels; a tree whose root has no profile label: the root's name."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "8"}))
    root_labels = {keys.LABEL_TREE_ID: "1234", keys.LABEL_IS_ROOT: "true"}
    bodies = [
        k8s.quota("gpu-root", min={"cpu": "8"}, max={"cpu": "8"}, is_parent=True,
                  labels={**root_labels, keys.LABEL_PROFILE: "gpu-pool"}),
        k8s.quota("gpu-team", min={"cpu": "2"}, max={"cpu": "8"}, parent="gpu-root",
                  labels={keys.LABEL_TREE_ID: "1234"}),
        k8s.quota("cpu-root", min={"cpu": "4"}, max={"cpu": "4"}, is_parent=True,
                  labels={keys.LABEL_TREE_ID: "99", keys.LABEL_IS_ROOT: "true"}),
    ]  # fmt: skip
    for body in bodies:
        cluster.store(body)
        state.on_quota(body)
    state.mark_synced()
    writer = Writer(cluster, state, make_settings())
    for tree in ("1234", "99"):
        await TreeLoop(tree, state, writer, 1.0, leading, lambda: None, metrics).reconcile_once()
    assert tree_names(metrics) == {"1234": "gpu-pool", "99": "cpu-root"}


async def test_an_unset_max_and_the_no_limit_sentinels_have_no_series(
    tree_loop: TreeLoop, metrics: Metrics
) -> None:
    await tree_loop.reconcile_once()
    assert figure(metrics, "elastic_quota_max", "team-b", "memory") is None  # no max: unlimited
    assert figure(metrics, "elastic_quota_max", keys.SYSTEM_QUOTA, "cpu") is None
    assert figure(metrics, "elastic_quota_max", keys.SYSTEM_QUOTA, "memory") is None
    assert figure(metrics, "elastic_quota_runtime", keys.SYSTEM_QUOTA, "cpu") is None
    assert figure(metrics, "elastic_quota_used", keys.SYSTEM_QUOTA, "cpu") == 0.0  # a real 0


async def test_lending_and_borrowing_limits_are_shown_as_their_annotations_set_them(
    tree_loop: TreeLoop, metrics: Metrics, world: ControllerState, k8s: Bodies
) -> None:
    limits = {
        keys.ANNO_LENDING_LIMIT: '{"cpu": "1500m"}',
        keys.ANNO_BORROWING_LIMIT: '{"cpu": "3", "memory": "2Gi"}',
    }
    team_a = {"min": {"cpu": "2"}, "max": {"cpu": "8", "memory": "8Gi"}, "parent": "dept"}
    world.on_quota(k8s.quota("team-a", **team_a, annotations=limits))
    await tree_loop.reconcile_once()
    assert figure(metrics, "elastic_quota_lending_limit", "team-a", "cpu") == 1.5
    assert figure(metrics, "elastic_quota_lending_limit", "team-a", "memory") is None
    assert figure(metrics, "elastic_quota_borrowing_limit", "team-a", "cpu") == 3.0
    assert figure(metrics, "elastic_quota_borrowing_limit", "team-a", "memory") == 2 * GIB
    assert figure(metrics, "elastic_quota_lending_limit", "team-b", "cpu") is None  # none set

    borrowing_only = {keys.ANNO_BORROWING_LIMIT: '{"cpu": "1"}'}
    world.on_quota(k8s.quota("team-a", **team_a, annotations=borrowing_only))
    await tree_loop.reconcile_once()
    assert figure(metrics, "elastic_quota_lending_limit", "team-a", "cpu") is None
    assert figure(metrics, "elastic_quota_borrowing_limit", "team-a", "cpu") == 1.0
    assert figure(metrics, "elastic_quota_borrowing_limit", "team-a", "memory") is None


def test_display_units() -> None:
    assert display_value("cpu", 1500) == 1.5
    assert display_value("memory", 3 * GIB) == 3 * GIB
    assert display_value("nvidia.com/gpu", 2) == 2.0
    assert display_value("cpu", keys.RESERVED_GROUP_MAX * 1000) is None
    assert display_value("memory", keys.RESERVED_GROUP_MAX) is None
    assert display_value("cpu", keys.PROFILE_ROOT_MAX * 1000) is None
    assert display_value("memory", keys.PROFILE_ROOT_MAX) is None
    assert display_value("memory", 2**62 - 1) is None  # what the engine clamps to


async def test_a_deleted_quota_is_gone_at_the_next_scrape(
    tree_loop: TreeLoop, metrics: Metrics, world: ControllerState, k8s: Bodies
) -> None:
    await tree_loop.reconcile_once()
    assert "team-b" in quota_samples(metrics)
    world.on_quota_deleted(k8s.quota("team-b", parent="dept"))
    assert "team-b" not in quota_samples(metrics)  # before any new solve
    await tree_loop.reconcile_once()
    assert "team-b" not in quota_samples(metrics)
    assert "team-a" in quota_samples(metrics)


async def test_nothing_per_quota_before_a_solve_nor_on_a_standby(
    tree_loop: TreeLoop, metrics: Metrics, leading: asyncio.Event
) -> None:
    assert quota_samples(metrics) == []
    await tree_loop.reconcile_once()
    assert quota_samples(metrics) != []
    leading.clear()
    assert quota_samples(metrics) == []
    assert metrics.registry.get_sample_value("elastic_quota_leader") == 0.0
    assert "elastic_quota_runtime" in {family.name for family in metrics.registry.collect()}


def test_leader_ready_and_info(
    state: ControllerState, metrics: Metrics, leading: asyncio.Event
) -> None:
    value = metrics.registry.get_sample_value
    assert (value("elastic_quota_leader"), value("elastic_quota_ready")) == (1.0, 0.0)
    state.mark_synced()
    leading.clear()
    assert (value("elastic_quota_leader"), value("elastic_quota_ready")) == (0.0, 1.0)
    assert value("elastic_quota_info", {"version": __version__}) == 1.0


def test_invalid_quotas_counts_the_quotas_left_out(
    state: ControllerState, metrics: Metrics, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("fine", min={"cpu": "1"}, max={"cpu": "2"}))
    state.on_quota(k8s.quota("noted", min={"cpu": "1", "memory": "1Gi"}, max={"cpu": "2"}))
    assert metrics.registry.get_sample_value("elastic_quota_invalid_quotas") == 0.0
    state.on_quota(k8s.quota("inverted", min={"cpu": "4"}, max={"cpu": "2"}))
    state.on_quota(k8s.quota("orphan", max={"cpu": "2"}, parent="nobody"))
    state.on_pod(k8s.pod("broken", requests={"cpu": "lots"}))  # a pod problem is no quota's
    assert metrics.registry.get_sample_value("elastic_quota_invalid_quotas") == 2.0
    assert {problem.object for problem in state.problems()} >= {
        "ElasticQuota team/noted",
        "ElasticQuota team/inverted",
        "ElasticQuota team/orphan",
    }


def test_gated_pods_per_quota_on_the_active_replica_only(
    state: ControllerState, metrics: Metrics, leading: asyncio.Event
) -> None:
    state.gated = {("team-a", "quota"): 3, ("team-a", "user-limit"): 1}
    value = metrics.registry.get_sample_value
    assert value("elastic_quota_gated_pods", {"quota": "team-a", "reason": "quota"}) == 3.0
    assert value("elastic_quota_gated_pods", {"quota": "team-a", "reason": "user-limit"}) == 1.0
    leading.clear()
    assert value("elastic_quota_gated_pods", {"quota": "team-a", "reason": "quota"}) is None


def test_nothing_is_registered_globally(state: ControllerState, leading: asyncio.Event) -> None:
    Metrics().watch(state, leading)
    names = {family.name for family in prometheus_client.REGISTRY.collect()}
    assert not [name for name in names if name.startswith("elastic_quota")]


def test_metric_names_are_every_family_exposed(metrics: Metrics) -> None:
    exposed = {
        f"{family.name}_total" if family.type == "counter" else family.name
        for family in metrics.registry.collect()
    }
    assert exposed == METRIC_NAMES
    assert all(name.startswith("elastic_quota_") for name in METRIC_NAMES)
