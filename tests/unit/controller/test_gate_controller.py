"""The gate controller: release what fits, tell the rest why, preempt within the quota.

The Kubernetes adapters are replaced by recording fakes; the decisions come from the real engine.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from elasticquota.controller import gating
from elasticquota.controller.gating import GateController
from elasticquota.controller.state import ControllerState
from elasticquota.core.engine import EngineSettings
from elasticquota.core.keys import ADMISSION_GATE, LABEL_ALLOW_LENT, POD_LABEL_QUOTA
from elasticquota.kube.evictions import EvictionOutcome
from elasticquota.kube.lease import NotLeadingError
from elasticquota.settings import Settings


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def evict(self, namespace: str, name: str) -> EvictionOutcome:
        self.calls.append(("evict", namespace, name))
        return EvictionOutcome.EVICTED


def pod(name: str, cpu: str, priority: int, gated: bool = False, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
    }
    if gated:
        spec["schedulingGates"] = [{"name": ADMISSION_GATE}]
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {POD_LABEL_QUOTA: "team"}},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


@pytest.fixture
def world() -> ControllerState:
    state = ControllerState.create(EngineSettings())
    state.on_quota(
        {
            "metadata": {"name": "team", "namespace": "ns", "labels": {LABEL_ALLOW_LENT: "false"}},
            "spec": {"min": {"cpu": "4"}, "max": {"cpu": "4"}},
        }
    )
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
    state.mark_synced()
    return state


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()

    def record(verb: str) -> Any:
        async def fake(_api: Any, *args: Any) -> None:
            recorder.calls.append((verb, *args))

        return fake

    monkeypatch.setattr(gating, "set_scheduling_gates", record("gates"))
    monkeypatch.setattr(gating, "set_waiting_condition", record("condition"))
    monkeypatch.setattr(gating, "post_event", record("event"))
    return recorder


def controller(world: ControllerState, recorder: Recorder) -> GateController:
    gate = GateController(world, None, Settings(), asyncio.Event())  # type: ignore[arg-type]
    gate._evictor = recorder  # type: ignore[assignment]
    return gate


async def test_a_pod_that_fits_loses_the_gate(world: ControllerState, recorder: Recorder) -> None:
    world.on_pod(pod("new", "2", 5, gated=True))
    gate = controller(world, recorder)
    await gate.step()
    assert ("gates", "ns", "new", []) in recorder.calls
    assert list(gate.released) == ["ns/new"]


async def test_a_waiting_pod_is_told_why_once_and_lower_priority_pods_of_its_quota_make_room(
    world: ControllerState, recorder: Recorder
) -> None:
    world.on_pod(pod("low", "4", 0, node="n1"))
    world.on_pod(pod("new", "2", 5, gated=True))
    gate = controller(world, recorder)
    await gate.step()
    verbs = [call[0] for call in recorder.calls]
    assert verbs.count("condition") == 1 and ("evict", "ns", "low") in recorder.calls
    assert list(gate.preempted) == ["ns/low"] and list(gate.released) == []
    reason = next(call for call in recorder.calls if call[0] == "condition")[4]
    assert reason == "quota team: cpu used 4 + request 2 > runtime 4"


async def test_no_preemption_of_equal_or_higher_priority_pods(
    world: ControllerState, recorder: Recorder
) -> None:
    world.on_pod(pod("peer", "4", 5, node="n1"))
    world.on_pod(pod("new", "2", 5, gated=True))
    gate = controller(world, recorder)
    await gate.step()
    await gate.step()  # told once only
    assert not [call for call in recorder.calls if call[0] == "evict"]
    assert [call[0] for call in recorder.calls].count("condition") == 1


async def test_a_round_ends_at_the_first_write_the_fence_refuses(
    world: ControllerState, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lease was lost mid-round: the other pods are not tried (each would be refused too)."""
    for name in ("a", "b", "c"):
        world.on_pod(pod(name, "1", 5, gated=True))

    async def fenced(_api: Any, namespace: str, name: str, gates: list[str]) -> None:
        recorder.calls.append(("gates", namespace, name, gates))
        raise NotLeadingError(f"patch pod {namespace}/{name}: not sent")

    monkeypatch.setattr(gating, "set_scheduling_gates", fenced)
    gate = controller(world, recorder)
    await gate.step()
    assert [call[0] for call in recorder.calls] == ["gates"]
    assert list(gate.released) == []
