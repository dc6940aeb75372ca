"""The revocation loop in virtual time (looptime): nothing before the delay, one round after it,
the next round only after another full delay, and nothing once the over-use is over."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from elasticquota.controller import revocation
from elasticquota.controller.revocation import RevocationController
from elasticquota.controller.state import ControllerState
from elasticquota.core.engine import EngineSettings
from elasticquota.core.keys import LABEL_ALLOW_LENT, POD_LABEL_PREEMPTIBLE, POD_LABEL_QUOTA
from elasticquota.core.overuse import ANNO_OVER_USED_SINCE
from elasticquota.kube.evictions import EvictionOutcome
from elasticquota.kube.lease import NotLeadingError
from elasticquota.settings import Settings

DELAY = 30.0


class Evictions:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.times: list[tuple[float, str]] = []

    async def evict(self, namespace: str, name: str) -> EvictionOutcome:
        self.times.append((self.loop.time(), name))
        return EvictionOutcome.EVICTED


def running(name: str, cpu: str, priority: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {POD_LABEL_QUOTA: "team"}},
        "spec": {
            "priority": priority,
            "nodeName": "n1",
            "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def leading_controller(
    world: ControllerState, loop: asyncio.AbstractEventLoop
) -> tuple[RevocationController, Evictions]:
    """The active replica's controller (delay ``DELAY``, a check a second, the loop's clock),
    evicting into an ``Evictions`` record."""
    leading = asyncio.Event()
    leading.set()
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0)
    controller = RevocationController(world, None, settings, leading, clock=loop.time)  # type: ignore[arg-type]
    evictions = Evictions(loop)
    controller._evictor = evictions  # type: ignore[assignment]
    return controller, evictions


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> ControllerState:
    state = ControllerState.create(EngineSettings())
    state.on_quota(
        {
            "metadata": {"name": "team", "namespace": "ns", "labels": {LABEL_ALLOW_LENT: "false"}},
            "spec": {"min": {"cpu": "2"}, "max": {"cpu": "2"}},
        }
    )
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
    state.on_pod(running("keep", "2", 9))
    state.on_pod(running("extra", "1", 0))  # used 3 > runtime 2 from the start
    state.mark_synced()

    async def patch(_api: Any, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        quota = state.quotas[(namespace, name)]
        annotations = {**quota.annotations, **body["metadata"]["annotations"]}
        return {
            "metadata": {"name": name, "namespace": namespace, "labels": quota.labels,
                         "annotations": {k: v for k, v in annotations.items() if v is not None}},
            "spec": quota.spec,
        }  # fmt: skip

    async def no_event(*_: Any) -> None:
        return None

    monkeypatch.setattr(revocation, "patch_quota", patch)
    monkeypatch.setattr(revocation, "post_event", no_event)
    return state


@pytest.mark.looptime
async def test_rounds_come_only_after_each_full_delay(world: ControllerState) -> None:
    loop = asyncio.get_running_loop()
    controller, evictions = leading_controller(world, loop)
    start = loop.time()
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(DELAY - 1)
    assert evictions.times == []  # not before the delay
    await asyncio.sleep(3)
    assert [name for _, name in evictions.times] == ["extra"]
    assert (
        DELAY < evictions.times[0][0] - start <= DELAY + 2
    )  # strictly after it, at the next check
    await asyncio.sleep(DELAY - 3)
    assert len(evictions.times) == 1  # the timer restarted: no second round yet
    await asyncio.sleep(5)
    assert len(evictions.times) == 2  # still over-used (nothing terminates here): another round
    world.on_pod_deleted(running("extra", "1", 0))  # the over-use ends
    await asyncio.sleep(3 * DELAY)
    assert len(evictions.times) == 2
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@pytest.mark.looptime
async def test_an_over_use_with_nothing_evictable_keeps_its_start_and_its_event(
    world: ControllerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds keep coming every delay, but they repeat one state: the same Event (which the
    Event series counts, ``kube.events``) and the same over-use start, written once."""
    for name in ("keep", "extra"):
        pod = running(name, "2" if name == "keep" else "1", 0)
        pod["metadata"]["labels"][POD_LABEL_PREEMPTIBLE] = "false"
        world.on_pod(pod)
    events: list[tuple[str, str, str]] = []
    since_writes: list[str | None] = []
    original_patch = revocation.patch_quota

    async def record_event(_api: Any, involved: dict[str, str], reason: str, message: str) -> None:
        events.append((involved["name"], reason, message))

    async def record_patch(api: Any, namespace: str, name: str, body: dict[str, Any]) -> Any:
        since_writes.append(body["metadata"]["annotations"][ANNO_OVER_USED_SINCE])
        return await original_patch(api, namespace, name, body)

    monkeypatch.setattr(revocation, "post_event", record_event)
    monkeypatch.setattr(revocation, "patch_quota", record_patch)
    loop = asyncio.get_running_loop()
    controller, evictions = leading_controller(world, loop)
    task = asyncio.create_task(controller.run())
    await asyncio.sleep(5 * DELAY + 2)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

    assert evictions.times == []
    assert len(events) == 4  # a round every delay (checks every second: 31 s apart)...
    assert len(set(events)) == 1  # ...each the same Event: one state, one series
    assert "none evictable" in events[0][2]
    assert len(since_writes) == 1  # the start, written once when the over-use began
    quota = world.quotas[("ns", "team")]
    assert quota.annotations[ANNO_OVER_USED_SINCE] == since_writes[0]


class LostLease:
    """An evictor behind a closed fence: every eviction is refused before it is sent."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    async def evict(self, namespace: str, name: str) -> EvictionOutcome:
        self.attempts.append(name)
        raise NotLeadingError(f"evict {namespace}/{name}: not sent")


async def test_a_round_ends_at_the_first_eviction_the_fence_refuses(
    world: ControllerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.on_pod(running("extra-2", "1", 0))  # two victims now
    pod_events: list[str] = []

    async def record_event(_api: Any, involved: dict[str, str], reason: str, message: str) -> None:
        if involved["kind"] == "Pod":
            pod_events.append(reason)

    monkeypatch.setattr(revocation, "post_event", record_event)
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0)
    now = [100.0]
    controller = RevocationController(world, None, settings, asyncio.Event(), clock=lambda: now[0])  # type: ignore[arg-type]
    refused = LostLease()
    controller._evictor = refused  # type: ignore[assignment]
    await controller.check_once()  # the over-use starts
    now[0] += DELAY + 1
    await controller.check_once()  # a round is due
    assert len(refused.attempts) == 1  # not one refusal per victim
    assert pod_events == []  # no RevocationFailed Event (it would be refused too)
