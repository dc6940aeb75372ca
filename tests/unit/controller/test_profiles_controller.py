"""The profile controller: each ElasticQuotaProfile's root quota follows its node pool.

Rules (controller/reconcile/profiles.py): the root quota is created when missing and merge-patched
where it differs from ``core.tree.profiles.root_quota_manifest`` (the labels and the two annotations
the controller owns, and the spec); nothing is written when it matches; a profile without a
``tree-id`` label gets it written back; an edit of the root by hand is undone, one that leaves it
no root (``is-root`` removed) too; changes are debounced; nothing is written before ``synced``,
by a standby, or in dry-run; a failure posts an ``UpdateQuotaFailed`` Event on the profile and is
retried; a patch, applied as a JSON merge patch, leaves nothing more to patch.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from background import running
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.api.parse import parse_profile
from elasticquota.controller.cluster import DryRunCluster
from elasticquota.controller.context import LoopContext
from elasticquota.controller.reconcile.profiles import ProfileController
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.tree.profiles import profile_tree_id, root_quota_manifest

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

GPU_POOL = {"pool": "gpu"}
TREE_ID = profile_tree_id(parse_profile(
    {"metadata": {"name": "gpu", "namespace": "team"},
     "spec": {"quotaName": "gpu-root", "nodeSelector": {}}}
)[0])  # fmt: skip


def desired_root(state: ControllerState) -> dict[str, Any]:
    profile = state.profiles[("team", "gpu")]
    current = state.quotas.get(("team", "gpu-root"))
    manifest = current.as_manifest() if current else None
    return root_quota_manifest(profile, state.engine.nodes.values(), manifest)


@pytest.fixture
def pool(state: ControllerState, k8s: Bodies, cluster: FakeCluster) -> ControllerState:
    """Two gpu-pool nodes, one other node, and the profile ``gpu`` (tree-id label not written)."""
    state.on_node(k8s.node("n1", labels=GPU_POOL, allocatable={"cpu": "8", "memory": "32Gi"}))
    state.on_node(k8s.node("n2", labels=GPU_POOL, allocatable={"cpu": "8", "memory": "32Gi"}))
    state.on_node(k8s.node("n3", allocatable={"cpu": "4", "memory": "16Gi"}))
    profile = k8s.profile("gpu", quota_name="gpu-root", match_labels=GPU_POOL)
    cluster.store(profile)
    state.on_profile(profile)
    return state


@contextlib.asynccontextmanager
async def profiles_running(context: LoopContext, synced: bool = True) -> AsyncIterator[None]:
    """The profile controller running for the body of the block (on a synced memory unless told
    not)."""
    if synced:
        context.state.mark_synced()
    async with running(ProfileController(context).run()):
        yield


@pytest.fixture
def up_to_date(pool: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ControllerState:
    """``pool`` with the root exactly as the controller wants it, and the profile labelled."""
    root = desired_root(pool)
    cluster.store(root)
    pool.on_quota(root)
    labelled = k8s.profile(
        "gpu", quota_name="gpu-root", match_labels=GPU_POOL, labels={keys.LABEL_TREE_ID: TREE_ID}
    )
    cluster.store(labelled)
    pool.on_profile(labelled)
    return pool


# -- root_quota_patch -----------------------------------------------------------------------------


# -- ProfileController ----------------------------------------------------------------------------


@pytest.mark.looptime
async def test_a_missing_root_quota_is_created_and_the_profile_labelled(
    pool: ControllerState, cluster: FakeCluster, context: LoopContext
) -> None:
    expected = desired_root(pool)
    async with profiles_running(context):
        await asyncio.sleep(5)

    assert cluster.calls == [
        ("create_quota", "team", "gpu-root", expected),
        ("patch_profile", "team", "gpu", {"metadata": {"labels": {keys.LABEL_TREE_ID: TREE_ID}}}),
    ]
    assert expected["spec"]["min"] == {"cpu": "16", "memory": "64Gi"}  # n1 + n2, not n3
    root = pool.quotas[("team", "gpu-root")]
    assert root.uid == "uid-team-gpu-root"  # the created object is the current one
    assert pool.profile_labels[("team", "gpu")] == {keys.LABEL_TREE_ID: TREE_ID}
    assert TREE_ID not in pool.engine.tree_ids()  # a write is not intake: the watch is
    for body in cluster.watch():
        (pool.on_quota if body["kind"] == "ElasticQuota" else pool.on_profile)(body)
    assert TREE_ID in pool.engine.tree_ids()  # and the engine has the profile's tree


@pytest.mark.looptime
@pytest.mark.usefixtures("up_to_date")
async def test_an_up_to_date_root_is_not_written(
    cluster: FakeCluster, context: LoopContext
) -> None:
    async with profiles_running(context):
        await asyncio.sleep(10)
    assert cluster.calls == []


@pytest.mark.looptime
async def test_the_root_follows_its_node_pool(
    up_to_date: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    k8s: Bodies,
) -> None:
    pool = up_to_date
    async with profiles_running(context):
        await asyncio.sleep(5)
        pool.on_node(k8s.node("n4", labels=GPU_POOL, allocatable={"cpu": "8", "memory": "32Gi"}))
        await asyncio.sleep(5)

    ((verb, _, name, patch),) = cluster.calls
    assert (verb, name) == ("patch_quota", "gpu-root")
    assert patch["spec"]["min"] == {"cpu": "24", "memory": "96Gi"}
    assert patch["metadata"]["annotations"] == {
        keys.ANNO_TOTAL_RESOURCE: '{"cpu":"24","memory":"96Gi"}'
    }
    assert pool.quotas[("team", "gpu-root")].spec["min"] == {"cpu": "24", "memory": "96Gi"}


@pytest.mark.looptime
async def test_a_root_whose_is_root_label_was_removed_by_hand_gets_it_back(
    up_to_date: ControllerState, cluster: FakeCluster, context: LoopContext
) -> None:
    """Without the label the tree has no root (no total: its quotas get nothing) and the default
    tree takes the pool back; the edit is a change of the root even though what it leaves is not
    one."""
    pool = up_to_date
    async with profiles_running(context):
        await asyncio.sleep(5)
        edited = copy.deepcopy(cluster.quotas[("team", "gpu-root")])
        del edited["metadata"]["labels"][keys.LABEL_IS_ROOT]
        cluster.store(edited)
        pool.on_quota(edited)
        await asyncio.sleep(5)

    assert cluster.calls == [
        (
            "patch_quota",
            "team",
            "gpu-root",
            {"metadata": {"labels": {keys.LABEL_IS_ROOT: "true"}, "annotations": {}}},
        )
    ]
    assert cluster.quotas[("team", "gpu-root")]["metadata"]["labels"][keys.LABEL_IS_ROOT] == "true"


@pytest.mark.looptime
async def test_changes_within_the_debounce_make_one_pass(
    up_to_date: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    make_settings: Any,
    k8s: Bodies,
) -> None:
    pool = up_to_date
    async with profiles_running(replace(context, settings=make_settings(profile_debounce=2.0))):
        await asyncio.sleep(5)
        for index in range(5):  # five nodes join within 1 s
            node = k8s.node(f"m{index}", labels=GPU_POOL, allocatable={"cpu": "1", "memory": "1Gi"})
            pool.on_node(node)
            await asyncio.sleep(0.2)
        await asyncio.sleep(10)

    assert [verb for verb, *_ in cluster.calls] == ["patch_quota"]
    assert cluster.quotas[("team", "gpu-root")]["spec"]["min"] == {"cpu": "21", "memory": "69Gi"}


@pytest.mark.looptime
async def test_a_patch_converges_when_the_profile_dropped_a_resource(
    up_to_date: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
) -> None:
    pool = up_to_date
    stale = cluster.quotas[("team", "gpu-root")]
    stale["spec"]["min"]["nvidia.com/gpu"] = "4"
    stale["spec"]["max"]["nvidia.com/gpu"] = "4611686018427387"
    pool.on_quota(stale)
    async with profiles_running(context):
        await asyncio.sleep(30)

    assert [verb for verb, *_ in cluster.calls] == ["patch_quota"]  # once, not every debounce
    assert "nvidia.com/gpu" not in cluster.quotas[("team", "gpu-root")]["spec"]["min"]


@pytest.mark.looptime
async def test_nothing_is_written_before_the_initial_listing_nor_by_a_standby(
    pool: ControllerState,
    cluster: FakeCluster,
    context: LoopContext,
    leading: asyncio.Event,
    listed: bool,
) -> None:
    async with profiles_running(context, synced=listed):
        await asyncio.sleep(30)
        assert cluster.calls == []
        pool.mark_synced()
        leading.set()
        await asyncio.sleep(5)
        assert "create_quota" in cluster.verbs()


@pytest.mark.looptime
async def test_dry_run_writes_nothing(
    pool: ControllerState, cluster: FakeCluster, context: LoopContext
) -> None:
    dry_run = DryRunCluster()
    async with profiles_running(replace(context, cluster=dry_run)):
        await asyncio.sleep(10)
    assert cluster.calls == []
    assert ("team", "gpu-root") not in pool.quotas
    assert {verb for verb, *_ in dry_run.calls} == {"create_quota", "patch_profile"}


@pytest.mark.looptime
async def test_a_failure_is_reported_on_the_profile_and_retried(
    pool: ControllerState, cluster: FakeCluster, context: LoopContext
) -> None:
    cluster.fail("create_quota", ApiException(status=403, reason="Forbidden"))
    async with profiles_running(context):
        await asyncio.sleep(10)

    assert cluster.verbs() == ["create_quota", "post_event", "create_quota", "patch_profile"]
    (event,) = cluster.events
    assert event["reason"] == "UpdateQuotaFailed"
    assert event["involvedObject"] == {
        "apiVersion": "quota.koordinator.sh/v1alpha1",
        "kind": "ElasticQuotaProfile",
        "namespace": "team",
        "name": "gpu",
    }
    assert "Forbidden" in event["message"]
    assert ("team", "gpu-root") in cluster.quotas


@pytest.mark.looptime
async def test_a_root_created_meanwhile_by_someone_else_is_left_to_the_watch(
    pool: ControllerState, cluster: FakeCluster, context: LoopContext
) -> None:
    cluster.store(desired_root(pool))  # in the cluster, not yet seen by the watch
    async with profiles_running(context):
        await asyncio.sleep(10)

    assert set(cluster.verbs()) == {"create_quota", "patch_profile"}  # a 409 is not an error
    assert ("team", "gpu-root") not in pool.quotas
    assert cluster.events == []


@pytest.mark.looptime
async def test_a_profile_deleted_while_another_is_written_is_skipped_not_fatal(
    pool: ControllerState, cluster: FakeCluster, context: LoopContext, k8s: Bodies
) -> None:
    """A pass walks the profiles it listed at its start; one deleted while an earlier one's root
    was being written is no longer in memory when its turn comes (the loop dying would stop the
    operator: the runner's guard)."""
    first = k8s.profile("cpu", quota_name="cpu-root", match_labels={"pool": "cpu"})
    cluster.store(first)
    pool.on_profile(first)
    cluster.latency = 1.0
    pool.mark_synced()
    async with running(ProfileController(context).run()) as task:
        await asyncio.sleep(1.5)  # the debounce, then cpu-root's creation in flight
        assert cluster.named("create_quota") == ["cpu-root"]
        pool.on_profile_deleted(k8s.profile("gpu", quota_name="gpu-root", match_labels=GPU_POOL))
        await asyncio.sleep(10)
        assert not task.done(), task.exception()

    assert cluster.named("create_quota") == ["cpu-root"]
    assert ("team", "gpu-root") not in cluster.quotas


async def watch_echoes(state: ControllerState, cluster: FakeCluster) -> None:
    """The watch: every write's object handed back to memory a moment after it is made."""
    while True:
        for body in cluster.watch():
            (state.on_quota if body["kind"] == "ElasticQuota" else state.on_profile)(body)
        await asyncio.sleep(0.1)


@pytest.mark.looptime
async def test_of_two_profiles_naming_one_quota_the_first_writes_it_the_other_is_reported(
    pool: ControllerState, cluster: FakeCluster, context: LoopContext, k8s: Bodies
) -> None:
    """As plan applies them (plan/compute.py): the first by namespace/name writes the root; the
    other would write its own pool's root over it at every pass, for ever."""
    other = k8s.profile("gpu2", quota_name="gpu-root", match_labels={"pool": "other"})
    other["metadata"]["uid"] = "uid-of-gpu2"
    cluster.store(other)
    pool.on_profile(other)
    expected = desired_root(pool)
    pool.mark_synced()
    async with running(ProfileController(context).run()), running(watch_echoes(pool, cluster)):
        await asyncio.sleep(30)

    assert cluster.named("create_quota") == ["gpu-root"]
    assert cluster.named("patch_quota") == []
    assert cluster.quotas[("team", "gpu-root")]["spec"] == expected["spec"]
    assert cluster.named("patch_profile") == ["gpu"]  # an ignored profile is not labelled either
    (event,) = cluster.events
    assert (event["reason"], event["involvedObject"]["name"]) == ("ProfileIgnored", "gpu2")
    assert event["involvedObject"]["uid"] == "uid-of-gpu2"  # what `kubectl describe` selects by
    assert event["message"] == (
        "quota 'gpu-root' is already the root of ElasticQuotaProfile team/gpu; "
        "this profile is ignored"
    )


class ReadsLogged(dict[Any, Any]):
    """The profiles in memory, each read by the controller's pass logged; the first read sets
    ``read``."""

    def __init__(self, profiles: dict[Any, Any], log: list[str]) -> None:
        super().__init__(profiles)
        self.log = log
        self.read = asyncio.Event()

    def get(self, key: Any, default: Any = None) -> Any:
        self.log.append(f"read {key[1]}")
        self.read.set()
        return super().get(key, default)


@pytest.mark.looptime
async def test_a_pass_gives_way_to_the_other_tasks_between_profiles(
    up_to_date: ControllerState, cluster: FakeCluster, context: LoopContext, k8s: Bodies
) -> None:
    """Each profile's root sums the allocatable of every node it selects (20 profiles over 10,000
    nodes: 0.1 s); roots that need no write make a pass with no await, which held the
    loop for all of them at once. A task woken by the first profile's read runs before the
    second's."""
    pool = up_to_date
    second = k8s.profile("gpu2", quota_name="gpu2-root", match_labels=GPU_POOL)
    cluster.store(second)
    pool.on_profile(second)
    log: list[str] = []
    pool.profiles = profiles = ReadsLogged(pool.profiles, log)

    async def other_task() -> None:
        await profiles.read.wait()
        log.append("other")

    async with profiles_running(context), running(other_task()):
        await asyncio.sleep(1.5)

    assert log[:3] == ["read gpu", "other", "read gpu2"]
