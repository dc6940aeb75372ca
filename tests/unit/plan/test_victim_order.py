"""``plan`` and the live operator pick the same revocation victims, in the same order.

The same pods go both ways: as manifests through ``plan`` (PriorityClass names resolved by ``plan``,
``status.startTime`` read from the file), and as the API server delivers them (``spec.priority``
filled in) to the operator's state, whose ``RevocationController`` then runs a real round. Among
pods of equal priority the later start goes first, a pod without a start time counts as starting
now, and an exact tie goes by ``namespace/name``.
"""

from __future__ import annotations

import asyncio
import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.revocation import RevocationController
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.revocation import victims_of
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.evictions import EvictionOutcome, EvictionResult
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import load_paths
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import K8s, Writer

Manifest = dict[str, Any]

PRIORITY = 50
#: name -> status.startTime (None: bound, not started yet). "b" and "e" started in the same second.
STARTS = {
    "a": "2026-11-20T09:00:00Z",
    "b": "2026-11-20T10:00:00Z",
    "c": "2026-11-20T11:00:00Z",
    "d": None,
    "e": "2026-11-20T10:00:00Z",
}
#: cpu 5 used, runtime 2 (the quota's max): d (no start), c, then b before e (tie, by name) go;
#: none fits back, so the victims are listed most important first.
EXPECTED = ["team/b", "team/c", "team/d"]


def priority_class(name: str, value: int) -> Manifest:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def manifests(k8s: type[K8s]) -> list[Manifest]:
    """A quota over its runtime with five running pods of one PriorityClass."""
    pods = []
    for name, start in STARTS.items():
        pod = k8s.pod(name, "team", {"cpu": "1"}, node="n1", quota="team", start_time=start)
        pod["spec"]["priorityClassName"] = "medium"
        pods.append(pod)
    return [
        priority_class("medium", PRIORITY),
        k8s.node("n1", {"cpu": "16"}),
        k8s.quota("team", max={"cpu": "2"}),
        *pods,
    ]


def as_served(manifest: Manifest) -> Manifest:
    """The object as the API server returns it: a pod's priority filled in from its class."""
    body = copy.deepcopy(manifest)
    if body["kind"] == "Pod":
        body["spec"]["priority"] = PRIORITY
    return body


def live_state(documents: list[Manifest]) -> ControllerState:
    """The operator's in-memory state after the watch delivered the objects."""
    state = ControllerState.create(EngineSettings())
    handlers = {"ElasticQuota": state.on_quota, "Node": state.on_node, "Pod": state.on_pod}
    for document in documents:
        if document["kind"] in handlers:
            handlers[document["kind"]](as_served(document))
    state.mark_synced()
    return state


class RecordingCluster:
    """The operator's cluster as far as a revocation round writes to it: evictions recorded."""

    def __init__(self) -> None:
        self.evicted: list[str] = []

    async def evict(self, namespace: str, name: str, created: str = "") -> EvictionResult:
        self.evicted.append(f"{namespace}/{name}")
        return EvictionResult(EvictionOutcome.EVICTED)

    async def patch_quota(self, *_: Any) -> None:
        return None

    async def post_event(self, *_: Any) -> None:
        return None


def live_round(state: ControllerState, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the operator's revocation controller evicts once the delay has passed."""
    for name in [name for name in os.environ if name.upper().startswith("ELASTIC_QUOTA_")]:
        monkeypatch.delenv(name)  # the settings come from this test alone
    clock = iter([0.0, 10.0])
    cluster = RecordingCluster()
    context = LoopContext(
        state,
        cluster,  # type: ignore[arg-type]  # the writes a round makes, no more
        Settings(revocation_delay=1.0, eviction_rate=100.0),
        leading=None,  # type: ignore[arg-type]  # check_once does not wait for the Lease
    )
    controller = RevocationController(context, clock=lambda: next(clock))

    async def two_checks() -> None:
        await controller.check_once()  # the over-use starts
        await controller.check_once()  # and has lasted longer than the delay: one round

    asyncio.run(two_checks())
    return cluster.evicted


def plan_round(path: Path) -> list[str]:
    plan = compute_plan(load_paths([path]))
    assert plan.problems == []
    return [pod.key for quota, pods in plan.revocations if quota == "team" for pod in pods]


def test_plan_and_the_operator_evict_the_same_pods_in_the_same_order(
    k8s: type[K8s], write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = manifests(k8s)
    state = live_state(documents)

    assert plan_round(write(*documents)) == EXPECTED
    assert [pod.key for pod in victims_of(state.engine.solve(), "team")] == EXPECTED
    assert live_round(state, monkeypatch) == EXPECTED


def test_a_pod_that_started_later_goes_first_whatever_its_name(
    k8s: type[K8s], write: Writer
) -> None:
    """Swapping two start times swaps the victims: the order follows startTime, not names."""
    documents = manifests(k8s)
    for document in documents:
        if document["kind"] == "Pod" and document["metadata"]["name"] in ("a", "c"):
            name = document["metadata"]["name"]
            document["status"]["startTime"] = STARTS["c" if name == "a" else "a"]
    assert plan_round(write(*documents)) == ["team/b", "team/a", "team/d"]


def test_the_api_servers_own_priority_classes_need_no_manifest(
    k8s: type[K8s], write: Writer
) -> None:
    """``system-cluster-critical`` is known to every API server: plan gives it its value."""
    critical = k8s.pod("critical", "team", {"cpu": "1"}, node="n1", quota="team")
    critical["spec"]["priorityClassName"] = "system-cluster-critical"
    documents = [*manifests(k8s), critical]
    plan = compute_plan(load_paths([write(*documents)]))
    assert plan.problems == []
    assert plan.snapshot.pods["team/critical"].priority == 2_000_000_000
    victims = [pod.key for quota, pods in plan.revocations if quota == "team" for pod in pods]
    assert "team/critical" not in victims  # it has no start time, but it outranks the others


def test_a_priority_class_without_an_integer_value_is_a_problem_not_a_crash(
    k8s: type[K8s], write: Writer
) -> None:
    pod = k8s.pod("p", "team", {"cpu": "1"}, node="n1", quota="team")
    pod["spec"]["priorityClassName"] = "odd"
    odd = priority_class("odd", 0) | {"value": "high"}
    plan = compute_plan(load_paths([write(odd, k8s.quota("team", max={"cpu": "2"}), pod)]))
    assert [(p.object, p.message) for p in plan.problems] == [
        ("PriorityClass /odd", "value 'high' is not an integer; ignored"),
        ("Pod team/p", "PriorityClass 'odd' is not in the input; priority 0"),
    ]
