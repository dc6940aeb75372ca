"""A write's answer that arrives after the watch told of a change of the quota is not kept as such.

Rules (controller/state.py, ``keep_written``): the object a write returns is kept for the next
diff only while memory holds that very object (same name, same uid). The API server can apply a
write, then a deletion (and a creation under the same name), and the watch can bring those to the
readers before the write's answer reaches the writer: that answer is older than memory. Kept, it
brought the deleted quota back into memory (until a relist, which only a 410 causes), and over a
quota created anew it hid the new object's missing figures from the next diff, so they were never
written. A quota the operator creates (a profile's root, a reserved quota) is kept by
``keep_created`` unless the watch brought it first. An answer to a write of figures (annotations
and status) that arrives after the watch brought an edit of the quota's inputs keeps the edit's
inputs: read again, it put the object as it was before the edit back in memory, and a profile
root's min edited by hand then looked as the profile controller wants it, and stayed.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

import pytest
from background import reconciling, running
from cluster_quotas import DEFAULT, add_quota
from fake_cluster import FakeCluster

from elasticquota.controller.reconcile.profiles import ProfileController
from elasticquota.controller.reconcile.writer import pending_writes
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.core.tree.profiles import root_quota_manifest
from elasticquota.kube.quotafigures import Changes

if TYPE_CHECKING:
    from conftest import Bodies

    from elasticquota.controller.context import LoopContext

CPU = "cpu"


class AnswersLate(FakeCluster):
    """The server applies each quota write at once; the answer reaches the operator only once
    ``answer`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = asyncio.Event()
        self.answer.set()

    async def write_quota(
        self, namespace: str, name: str, annotations: Changes, used: Changes | None
    ) -> dict[str, Any] | None:
        written = await super().write_quota(namespace, name, annotations, used)
        await self.answer.wait()
        return written


@pytest.fixture
def cluster() -> AnswersLate:
    return AnswersLate()


def fresh_writes(cluster: FakeCluster, k8s: Bodies) -> list[str]:
    """The quotas a fresh memory, fed the cluster's objects, finds out of line."""
    fresh = ControllerState.create(EngineSettings())
    fresh.on_node(k8s.node("n1"))
    for body in cluster.quotas.values():
        fresh.on_quota(body)
    fresh.on_pod(k8s.pod("p1", quota="a", requests={CPU: "1"}, node="n1", phase="Running"))
    return [change.name for change in pending_writes(fresh, fresh.engine.solve_tree(DEFAULT))]


def test_an_answer_about_a_deleted_quota_brings_nothing_back(
    state: ControllerState, k8s: Bodies
) -> None:
    body = k8s.quota("a", max={CPU: "4"})
    state.on_quota(body)
    state.on_quota_deleted(body)
    state.keep_written(k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_REQUEST: "{}"}))
    assert ("team", "a") not in state.quotas


def test_an_answer_about_the_previous_quota_of_a_name_leaves_the_new_one(
    state: ControllerState, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_quota_deleted(k8s.quota("a", max={CPU: "4"}))
    state.on_quota(k8s.quota("a", max={CPU: "4"}, uid="second"))
    state.keep_written(k8s.quota("a", max={CPU: "4"}, annotations={keys.ANNO_REQUEST: "{}"}))
    kept = state.quotas[("team", "a")]
    assert (kept.uid, dict(kept.annotations)) == ("second", {})


def test_a_created_quota_is_kept_unless_the_watch_brought_it_first(
    state: ControllerState, k8s: Bodies
) -> None:
    state.keep_created(k8s.quota("root", max={CPU: "4"}))
    assert state.quotas[("team", "root")].uid == "uid-team-root"
    state.on_quota(k8s.quota("other", max={CPU: "4"}, annotations={"seen": "watch"}))
    state.keep_created(k8s.quota("other", max={CPU: "4"}))
    assert state.quotas[("team", "other")].annotations == {"seen": "watch"}


@pytest.mark.looptime
@pytest.mark.parametrize("created_anew", [False, True], ids=["deleted", "deleted and created"])
async def test_a_late_answer_leaves_memory_and_the_figures_as_a_fresh_solve(
    state: ControllerState,
    cluster: AnswersLate,
    context: LoopContext,
    k8s: Bodies,
    created_anew: bool,
) -> None:
    state.on_node(k8s.node("n1"))
    add_quota(state, cluster, k8s.quota("a", min={CPU: "2"}, max={CPU: "4"}))
    add_quota(state, cluster, k8s.quota("b", min={CPU: "2"}, max={CPU: "4"}))
    async with reconciling(context):
        await asyncio.sleep(5)
        for echo in cluster.watch():
            state.on_quota(echo)
        cluster.answer.clear()
        state.on_pod(k8s.pod("p1", quota="a", requests={CPU: "1"}, node="n1", phase="Running"))
        await asyncio.sleep(0.1)  # a's write applied, its answer on the way
        assert cluster.named("write_quota")[-1] == "a"
        for echo in cluster.watch():
            state.on_quota(echo)
        state.on_quota_deleted(cluster.quotas.pop(("team", "a")))
        if created_anew:
            add_quota(state, cluster, k8s.quota("a", min={CPU: "2"}, max={CPU: "4"}, uid="2"))
        await asyncio.sleep(0.1)
        cluster.answer.set()
        await asyncio.sleep(5)
        for echo in cluster.watch():
            state.on_quota(echo)
        await asyncio.sleep(5)

    assert set(state.quotas) == set(cluster.quotas)
    assert fresh_writes(cluster, k8s) == []


def test_an_answer_to_a_figures_write_keeps_the_inputs_the_watch_brought_since(
    state: ControllerState, k8s: Bodies
) -> None:
    weight = keys.ANNO_SHARED_WEIGHT
    state.on_quota(k8s.quota("a", max={CPU: "4"}, annotations={weight: '{"cpu":"1"}'}))
    edited = k8s.quota("a", max={CPU: "8"}, annotations={weight: '{"cpu":"2"}'})
    state.on_quota(edited)  # by hand, after our write
    answer = {weight: '{"cpu":"1"}', keys.ANNO_REQUEST: "{}"}
    state.keep_written(k8s.quota("a", max={CPU: "4"}, annotations=answer, status={"used": {}}))
    kept = state.quotas[("team", "a")]
    assert kept.spec["max"] == {CPU: "8"} and kept.status == {"used": {}}
    assert kept.annotations == {weight: '{"cpu":"2"}', keys.ANNO_REQUEST: "{}"}


@pytest.mark.looptime
async def test_a_root_edited_by_hand_while_its_figures_were_answered_is_set_right(
    state: ControllerState, cluster: AnswersLate, context: LoopContext, k8s: Bodies
) -> None:
    pool = {"pool": "gpu"}
    state.on_node(k8s.node("n1", labels=pool, allocatable={"cpu": "8", "memory": "32Gi"}))
    profile = k8s.profile(
        "gpu", quota_name="root", match_labels=pool, labels={keys.LABEL_TREE_ID: "7"}
    )
    cluster.store(profile)
    state.on_profile(profile)
    root = root_quota_manifest(state.profiles[("team", "gpu")], state.engine.nodes.values())
    add_quota(state, cluster, root)
    async with reconciling(context), running(ProfileController(context).run()):
        await asyncio.sleep(5)
        for echo in cluster.watch():
            state.on_quota(echo)
        await asyncio.sleep(5)
        cluster.answer.clear()
        state.on_pod(k8s.pod("p1", quota="root", requests={CPU: "1"}, node="n1", phase="Running"))
        await asyncio.sleep(0.1)  # the root's figures written, the answer on the way
        assert cluster.named("write_quota")[-1] == "root"
        for echo in cluster.watch():
            state.on_quota(echo)
        edited = copy.deepcopy(cluster.quotas[("team", "root")])
        edited["spec"]["min"][CPU] = "3"  # by hand
        cluster.store(edited)
        state.on_quota(edited)
        await asyncio.sleep(0.1)
        cluster.answer.set()
        await asyncio.sleep(5)

    assert cluster.quotas[("team", "root")]["spec"]["min"][CPU] == "8"
