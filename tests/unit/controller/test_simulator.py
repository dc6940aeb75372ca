"""The demo's node simulation: a stand-in for the scheduler (binding) and the kubelets (Running).

Rules (devtools/eqdev/simulator.py): a node's usage is what its bound, unfinished pods request; a
profile tree's pods go to the profile's nodes, other pods to nodes no profile selects; a pod goes
to the first node (by name) with room for its whole request, never to a cordoned or NotReady node
(the scheduler would not); pending pods are considered highest priority first, then oldest; in one
round at most one pod per quota is bound, and only if it fits its quota now; bound pods still
Pending are marked Running; one failing pod never stops the round; the loop acts only after the
initial listing and only on the active replica. A deleted bound pod is removed once its grace
period is over (as a kubelet does); each bind, removal and waiting reason is told once by an Event.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.gating import admission_order
from elasticquota.core.model.models import LabelSelector, NodeInfo, PodInfo, ProfileSpec
from elasticquota.core.tree.profiles import profile_tree_id
from eqdev.simulator import (
    NodeSimulator,
    choose_node,
    eligible_nodes,
    node_usage,
)

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

CPU = "cpu"


def pod(name: str, cpu: int = 1000, **fields: Any) -> PodInfo:
    return PodInfo(namespace="team", name=name, requests={CPU: cpu}, **fields)


def node(name: str, cpu: int = 4000, **fields: Any) -> NodeInfo:
    return NodeInfo(name=name, allocatable={CPU: cpu}, **fields)


# -- pure helpers ---------------------------------------------------------------------------------


def test_node_usage_counts_bound_unfinished_pods() -> None:
    pods = [
        pod("a", 1000, node_name="n1", phase="Running"),
        pod("b", 500, node_name="n1", phase="Pending"),  # bound, not started yet: holds room
        pod("c", 2000, node_name="n2", phase="Succeeded"),  # finished: frees its room
        pod("d", 3000),  # not bound
    ]
    assert node_usage(pods) == {"n1": {CPU: 1500}}


def test_a_profile_tree_gets_its_profiles_nodes_and_the_default_tree_the_rest() -> None:
    pool = LabelSelector({"pool": "gpu"})
    gpu = ProfileSpec(name="gpu", namespace="team", quota_name="r", node_selector=pool)
    nodes = [node("n1", labels={"pool": "gpu"}), node("n2"), node("n3", labels={"pool": "cpu"})]

    assert [n.name for n in eligible_nodes(profile_tree_id(gpu), nodes, [gpu])] == ["n1"]
    assert [n.name for n in eligible_nodes("", nodes, [gpu])] == ["n2", "n3"]
    assert [n.name for n in eligible_nodes("", nodes, [])] == ["n1", "n2", "n3"]


def test_the_first_node_by_name_with_room_is_chosen() -> None:
    nodes = [node("n3"), node("n2"), node("n1")]
    usage = {"n1": {CPU: 3500}}
    assert choose_node(pod("p", 1000), nodes, usage) == "n2"
    assert choose_node(pod("p", 500), nodes, usage) == "n1"  # exactly full is still room


def test_no_node_when_nothing_has_room() -> None:
    assert choose_node(pod("p", 5000), [node("n1"), node("n2")], {}) is None
    assert choose_node(pod("p", 1000), [], {}) is None


def test_every_requested_resource_must_fit_and_zero_requests_are_ignored() -> None:
    gpu_pod = PodInfo(namespace="team", name="p", requests={CPU: 1000, "nvidia.com/gpu": 1})
    zero_gpu = PodInfo(namespace="team", name="q", requests={CPU: 1000, "nvidia.com/gpu": 0})
    assert choose_node(gpu_pod, [node("n1")], {}) is None  # n1 has no gpu at all
    assert choose_node(zero_gpu, [node("n1")], {}) == "n1"


@pytest.mark.parametrize(
    "blocked",
    [node("n1", unschedulable=True), node("n1", ready=False)],
    ids=["cordoned", "not-ready"],
)
def test_cordoned_and_not_ready_nodes_get_no_pods(blocked: NodeInfo) -> None:
    assert choose_node(pod("p"), [blocked, node("n2")], {}) == "n2"
    assert choose_node(pod("p"), [blocked], {}) is None


def test_pending_pods_go_by_priority_then_age_then_name() -> None:
    pods = [
        pod("old-low", priority=0, created="2024-01-01T00:00:00Z"),
        pod("new-high", priority=10, created="2024-03-01T00:00:00Z"),
        pod("b-mid", priority=5, created="2024-02-01T00:00:00Z"),
        pod("a-mid", priority=5, created="2024-02-01T00:00:00Z"),
        pod("older-mid", priority=5, created="2024-01-15T00:00:00Z"),
    ]
    order = [p.name for p in admission_order(pods)]
    assert order == ["new-high", "older-mid", "a-mid", "b-mid", "old-low"]


# -- NodeSimulator --------------------------------------------------------------------------------


@pytest.fixture
def demo(state: ControllerState, k8s: Bodies) -> ControllerState:
    """Nodes n1 (2 cpu) and n2 (8 cpu); quota ``a`` (max 4 cpu) and ``small`` (max 1 cpu)."""
    state.on_node(k8s.node("n1", allocatable={CPU: "2", "memory": "8Gi"}))
    state.on_node(k8s.node("n2", allocatable={CPU: "8", "memory": "32Gi"}))
    state.on_quota(k8s.quota("a", max={CPU: "4"}))
    state.on_quota(k8s.quota("small", max={CPU: "1"}))
    return state


@pytest.fixture
def simulator(demo: ControllerState, cluster: FakeCluster) -> NodeSimulator:
    """The simulator over ``demo``, stepped by the test."""
    return NodeSimulator(demo, cluster, asyncio.Event())


def bound(cluster: FakeCluster) -> dict[str, str]:
    return {name: node for verb, _, name, node in cluster.calls if verb == "bind_pod"}


def pod_calls(cluster: FakeCluster) -> list[tuple[str, str, str, Any]]:
    """The calls on pods (the Events that tell about them left out)."""
    return [call for call in cluster.calls if call[0] != "post_event"]


def told(cluster: FakeCluster) -> list[tuple[str, str, str]]:
    """(pod, reason, message) of every Event posted."""
    return [
        (event["involvedObject"]["name"], event["reason"], event["message"])
        for event in cluster.events
    ]


async def test_one_pod_per_quota_is_bound_and_started_each_round(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("late", quota="a", requests={CPU: "1"}, created="2024-02-01T00:00:00Z"))
    demo.on_pod(k8s.pod("early", quota="a", requests={CPU: "1"}, created="2024-01-01T00:00:00Z"))

    await simulator.step()

    assert pod_calls(cluster) == [
        ("bind_pod", "team", "early", "n1"),
        ("mark_running", "team", "early", None),
    ]
    # "late" waits for the next round (one binding per quota), which is not a reason to tell
    assert told(cluster) == [
        ("early", "Scheduled", "SIMULATION: fits quota a: bound to n1, Running")
    ]


async def test_the_next_round_sees_the_room_taken(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("p1", quota="a", requests={CPU: "2"}, created="2024-01-01T00:00:00Z"))
    demo.on_pod(k8s.pod("p2", quota="a", requests={CPU: "1"}, created="2024-02-01T00:00:00Z"))

    await simulator.step()
    demo.on_pod(k8s.pod("p1", quota="a", requests={CPU: "2"}, node="n1", phase="Running"))
    await simulator.step()

    assert bound(cluster) == {"p1": "n1", "p2": "n2"}  # n1 is full after p1


async def test_a_pod_that_does_not_fit_its_quota_is_not_bound(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("big", quota="small", requests={CPU: "2"}))
    demo.on_pod(k8s.pod("ok", quota="a", requests={CPU: "1"}))

    await simulator.step()

    assert bound(cluster) == {"ok": "n1"}


async def test_a_pod_no_node_can_hold_stays_pending(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("huge", quota="a", requests={"memory": "64Gi"}))
    await simulator.step()
    assert pod_calls(cluster) == []
    assert told(cluster) == [
        ("huge", "WaitingForQuota", "SIMULATION: waits: no node has room for it")
    ]


async def test_bound_pods_still_pending_are_started(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("scheduled", quota="a", requests={CPU: "1"}, node="n2"))
    demo.on_pod(k8s.pod("running", quota="a", requests={CPU: "1"}, node="n2", phase="Running"))

    await simulator.step()

    assert pod_calls(cluster) == [("mark_running", "team", "scheduled", None)]


async def test_one_failing_pod_does_not_stop_the_round(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("gone", quota="a", requests={CPU: "1"}, node="n2"))  # deleted meanwhile
    demo.on_pod(k8s.pod("new", quota="small", requests={CPU: "1"}))
    cluster.fail("mark_running", ApiException(status=404, reason="Not Found"))

    await simulator.step()

    assert bound(cluster) == {"new": "n1"}
    assert cluster.pods[("team", "new")]["status"]["phase"] == "Running"


async def test_a_failed_binding_does_not_stop_the_round(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("first", quota="a", requests={CPU: "1"}))
    demo.on_pod(k8s.pod("second", quota="small", requests={CPU: "1"}))
    cluster.fail("bind_pod", ApiException(status=409, reason="Conflict"))

    await simulator.step()

    assert [name for verb, _, name, _ in cluster.calls if verb == "bind_pod"] == ["first", "second"]
    assert ("team", "first") not in cluster.pods  # neither bound nor marked Running


@pytest.mark.looptime
async def test_the_loop_acts_only_after_the_listing_and_while_leading(
    demo: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("p", quota="a", requests={CPU: "1"}))
    leading = asyncio.Event()
    task = asyncio.create_task(NodeSimulator(demo, cluster, leading).run(interval=1.0))
    try:
        leading.set()
        await asyncio.sleep(10)
        assert cluster.calls == []  # not synced

        leading.clear()
        demo.mark_synced()
        await asyncio.sleep(10)
        assert cluster.calls == []  # standby

        leading.set()
        await asyncio.sleep(0.5)
        assert bound(cluster) == {"p": "n1"}
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_pod_that_does_not_fit_is_told_why_once_until_the_reason_changes(
    demo: ControllerState, simulator: NodeSimulator, cluster: FakeCluster, k8s: Bodies
) -> None:
    demo.on_pod(k8s.pod("big", quota="small", requests={CPU: "2"}))

    await simulator.step()
    await simulator.step()
    demo.on_pod(k8s.pod("big", quota="small", requests={CPU: "3"}))
    await simulator.step()

    reasons = [(name, reason) for name, reason, _ in told(cluster)]
    assert reasons == [("big", "WaitingForQuota"), ("big", "WaitingForQuota")]
    first, second = (message for _, _, message in told(cluster))
    assert "small" in first and first != second


async def test_a_deleted_bound_pod_is_removed_at_the_end_of_its_grace_period(
    demo: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    going = k8s.pod(
        "going", quota="a", requests={CPU: "1"}, node="n2", phase="Running",
        deleted="2024-01-01T00:00:30Z",
    )  # fmt: skip
    demo.on_pod(going)
    now = [1704067200.0 + 29]  # 2024-01-01T00:00:29Z: one second of grace left
    simulator = NodeSimulator(demo, cluster, asyncio.Event(), clock=lambda: now[0])

    await simulator.step()
    assert pod_calls(cluster) == []

    now[0] += 1
    await simulator.step()
    assert pod_calls(cluster) == [("remove_stopped_pod", "team", "going", None)]
    assert told(cluster) == [("going", "Stopped", "SIMULATION: the containers stopped on n2")]


async def test_a_deleted_pod_never_bound_is_left_to_the_api_server(
    demo: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    # An unbound pod is deleted at once by the API server; it is neither removed nor bound here.
    demo.on_pod(k8s.pod("pending", quota="a", requests={CPU: "1"}, deleted="2024-01-01T00:00:00Z"))
    await NodeSimulator(demo, cluster, asyncio.Event(), clock=lambda: 2e9).step()
    assert pod_calls(cluster) == []
