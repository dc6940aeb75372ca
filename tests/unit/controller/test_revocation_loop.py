"""The revocation loop in virtual time (looptime): nothing before the delay, one round after it,
the next round only after another full delay, and nothing once the over-use is over."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_cluster import FakeCluster
from kubernetes_asyncio.client.exceptions import ApiException
from revocation_rounds import delayed_round

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.revocation import SOLVE_EVERY, RevocationController
from elasticquota.controller.enforcement.rounds import RECHECK_INTERVAL, over_use_summary
from elasticquota.controller.metrics import Metrics
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.overuse import ANNO_OVER_USED_SINCE, format_since
from elasticquota.core.keys import LABEL_ALLOW_LENT, POD_LABEL_PREEMPTIBLE, POD_LABEL_QUOTA
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.kube.fence import NotLeadingError
from elasticquota.settings import Settings

DELAY = 30.0


def evictions(cluster: FakeCluster) -> list[tuple[float, str]]:
    """When each eviction was asked for (the loop's clock), and of which pod."""
    return [
        (at, name)
        for at, (verb, _, name, _) in zip(cluster.called_at, cluster.calls, strict=True)
        if verb == "evict"
    ]


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


@contextlib.asynccontextmanager
async def looping(controller: RevocationController) -> AsyncIterator[None]:
    """The controller's loop runs until the block ends."""
    task = asyncio.create_task(controller.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def leading_controller(
    world: ControllerState, cluster: FakeCluster, loop: asyncio.AbstractEventLoop
) -> RevocationController:
    """The active replica's controller (delay ``DELAY``, a check a second, the loop's clock)."""
    leading = asyncio.Event()
    leading.set()
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0)
    return RevocationController(LoopContext(world, cluster, settings, leading), clock=loop.time)


def team_quota(over_used_since: float | None = None) -> dict[str, Any]:
    """Quota ``team`` (2 cpu, lends nothing), with the over-use start the active replica
    recorded, if any."""
    annotations = (
        {} if over_used_since is None else {ANNO_OVER_USED_SINCE: format_since(over_used_since)}
    )
    return {
        "kind": "ElasticQuota",
        "metadata": {
            "name": "team",
            "namespace": "ns",
            "labels": {LABEL_ALLOW_LENT: "false"},
            "annotations": annotations,
        },
        "spec": {"min": {"cpu": "2"}, "max": {"cpu": "2"}},
    }


@pytest.fixture
def world(cluster: FakeCluster) -> ControllerState:
    state = ControllerState.create(EngineSettings())
    state.on_quota(cluster.store(team_quota()))
    state.on_node({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}})
    state.on_pod(running("keep", "2", 9))
    state.on_pod(running("extra", "1", 0))  # used 3 > runtime 2 from the start
    state.mark_synced()

    return state


@pytest.mark.looptime
async def test_rounds_come_only_after_each_full_delay(
    world: ControllerState, cluster: FakeCluster
) -> None:
    loop = asyncio.get_running_loop()
    controller = leading_controller(world, cluster, loop)
    start = loop.time()
    async with looping(controller):
        await asyncio.sleep(DELAY - 1)
        assert evictions(cluster) == []  # not before the delay
        await asyncio.sleep(3)
        assert [name for _, name in evictions(cluster)] == ["extra"]
        assert (
            DELAY < evictions(cluster)[0][0] - start <= DELAY + 2
        )  # strictly after it, at the next check
        await asyncio.sleep(DELAY - 3)
        assert len(evictions(cluster)) == 1  # the timer restarted: no second round yet
        await asyncio.sleep(5)
        assert (
            len(evictions(cluster)) == 2
        )  # still over-used (nothing terminates here): another round
        world.on_pod_deleted(running("extra", "1", 0))  # the over-use ends
        await asyncio.sleep(3 * DELAY)
        assert len(evictions(cluster)) == 2


@pytest.mark.looptime
async def test_an_over_use_with_nothing_evictable_keeps_its_start_and_its_event(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Rounds keep coming every delay, but they repeat one state: the same Event (which the
    Event series counts, ``kube.events``) and the same over-use start, written once."""
    for name in ("keep", "extra"):
        pod = running(name, "2" if name == "keep" else "1", 0)
        pod["metadata"]["labels"][POD_LABEL_PREEMPTIBLE] = "false"
        world.on_pod(pod)
    loop = asyncio.get_running_loop()
    controller = leading_controller(world, cluster, loop)
    async with looping(controller):
        await asyncio.sleep(5 * DELAY + 2)

    assert evictions(cluster) == []
    events = [(e["involvedObject"]["name"], e["reason"], e["message"]) for e in cluster.events]
    since_writes = [
        body["metadata"]["annotations"][ANNO_OVER_USED_SINCE]
        for verb, *_, body in cluster.calls
        if verb == "patch_quota"
    ]
    assert len(events) == 4  # a round every delay (checks every second: 31 s apart)...
    assert len(set(events)) == 1  # ...each the same Event: one state, one series
    assert "none evictable" in events[0][2]
    assert len(since_writes) == 1  # the start, written once when the over-use began
    quota = world.quotas[("ns", "team")]
    assert quota.annotations[ANNO_OVER_USED_SINCE] == since_writes[0]


async def test_a_round_ends_at_the_first_eviction_the_fence_refuses(
    world: ControllerState, cluster: FakeCluster
) -> None:
    world.on_pod(running("extra-2", "1", 0))  # two victims now
    cluster.fail("evict", NotLeadingError("evict ns/extra: not sent"))
    await delayed_round(world, cluster, DELAY)
    assert len(cluster.named("evict")) == 1  # not one refusal per victim
    assert [
        e for e in cluster.events if e["involvedObject"]["kind"] == "Pod"
    ] == []  # no RevocationFailed Event (it would be refused too)


async def test_an_eviction_outage_is_not_ended_in_the_log_by_the_event_that_tells_of_it(
    world: ControllerState, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A 503 (after the adapter's retries) is an outage of evictions: one WARNING; the
    RevocationFailed Event posted right after it goes through, and is no eviction that does."""
    cluster.fail("evict", ApiException(status=503, reason="Service Unavailable"))
    with caplog.at_level(logging.INFO, logger=RevocationController.__module__):
        await delayed_round(world, cluster, DELAY)
    said = [record.getMessage() for record in caplog.records]
    outage = [line for line in said if "failing" in line or "succeed again" in line]
    assert outage == [
        "revocation's evictions failing (the eviction of ns/extra: HTTP 503: Service "
        "Unavailable); retrying"
    ]
    assert [e["reason"] for e in cluster.events if e["involvedObject"]["kind"] == "Pod"] == [
        "RevocationFailed"
    ]


async def test_an_over_use_record_outage_is_not_ended_in_the_log_by_the_rounds_event(
    world: ControllerState, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The over-use record cannot be written at either check (a 503: the quota webhook down);
    the QuotaOverUsed Event of the round goes through, and is no record that does."""
    cluster.fail("patch_quota", *[ApiException(status=503, reason="Service Unavailable")] * 2)
    with caplog.at_level(logging.INFO, logger=RevocationController.__module__):
        await delayed_round(world, cluster, DELAY)
    said = [record.getMessage() for record in caplog.records]
    assert [line for line in said if "failing" in line or "succeed again" in line] == [
        "revocation's over-use records failing (the over-use record of team: HTTP 503: Service "
        "Unavailable); retrying"
    ]
    assert [e["reason"] for e in cluster.events] == ["QuotaOverUsed", "Revoked"]


async def test_an_event_that_cannot_be_posted_is_logged_with_the_object_it_is_about(
    world: ControllerState, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Events are refused (403): the QuotaOverUsed Event on the quota and the Revoked Event on
    the evicted pod each log which object it was about, not only the Event's reason."""
    cluster.fail("post_event", *(ApiException(status=403, reason="Forbidden") for _ in range(2)))
    with caplog.at_level(logging.WARNING, logger=RevocationController.__module__):
        await delayed_round(world, cluster, DELAY)
    said = [record.getMessage() for record in caplog.records]
    assert [line for line in said if "Event" in line] == [
        "revocation's Events failed for the QuotaOverUsed Event on ns/team: HTTP 403: Forbidden",
        "revocation's Events failed for the Revoked Event on ns/extra: HTTP 403: Forbidden",
    ]


@pytest.mark.looptime
async def test_a_round_evicts_no_victim_its_quota_stopped_needing_gone_meanwhile(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Two victims, whose evictions are paced: ``keep`` finishes after the first one, and a
    second later the quota fits without the second victim, which stays (a victim is checked on a
    solve at most a second old)."""
    world.on_pod(running("extra-2", "1", 0))  # used 4 > runtime 2: both small pods go
    evict = cluster.evict

    async def evict_then_keep_finishes(namespace: str, name: str, created: str = "") -> Any:
        outcome = await evict(namespace, name, created)
        world.on_pod({**running("keep", "2", 9), "status": {"phase": "Succeeded"}})
        await asyncio.sleep(RECHECK_INTERVAL)
        return outcome

    cluster.evict = evict_then_keep_finishes  # type: ignore[method-assign]
    await delayed_round(world, cluster, DELAY)
    assert cluster.named("evict") == ["extra-2"]


@pytest.mark.looptime
async def test_a_replica_that_becomes_active_times_over_uses_from_the_quotas_records(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """A standby that saw an over-use begin at its start, then end and begin again while another
    replica was active, takes over 2 s into the new one: its first round comes a full delay
    after the new start (it evicted at once when it kept the start it had read at its start)."""
    loop = asyncio.get_running_loop()
    world.on_quota(cluster.store(team_quota(loop.time())))
    leading = asyncio.Event()
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0)
    context = LoopContext(world, cluster, settings, leading)
    async with looping(RevocationController(context, clock=loop.time)):
        await asyncio.sleep(10)
        world.on_pod_deleted(running("extra", "1", 0))  # the active replica's records follow
        world.on_quota(cluster.store(team_quota()))
        await asyncio.sleep(100)
        world.on_pod(running("extra-2", "1", 0))
        started = loop.time()
        world.on_quota(cluster.store(team_quota(started)))
        await asyncio.sleep(2)
        leading.set()
        await asyncio.sleep(DELAY - 4)
        assert evictions(cluster) == []
        await asyncio.sleep(4)
        assert [name for _, name in evictions(cluster)] == ["extra-2"]
        assert DELAY < evictions(cluster)[0][0] - started <= DELAY + 2


@pytest.mark.looptime
async def test_a_replica_active_again_forgets_the_rounds_of_its_last_term(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """Leading, losing the Lease while the over-use ends, leading again: the timers are the
    quotas' records of the new term (none here), so nothing is due."""
    loop = asyncio.get_running_loop()
    leading = asyncio.Event()
    leading.set()
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0)
    context = LoopContext(world, cluster, settings, leading)
    async with looping(RevocationController(context, clock=loop.time)):
        await asyncio.sleep(DELAY - 5)  # the over-use began and is recorded; no round yet
        leading.clear()
        await asyncio.sleep(2)
        world.on_pod_deleted(running("extra", "1", 0))  # ended under another replica...
        world.on_quota(cluster.store(team_quota()))
        world.on_pod(running("extra-2", "1", 0))  # ...and began again, not recorded yet
        leading.set()
        await asyncio.sleep(10)
        assert evictions(cluster) == []  # the old start (DELAY + 7 s ago) is not used


async def test_an_over_use_record_refused_is_written_at_the_next_check(
    world: ControllerState, cluster: FakeCluster
) -> None:
    cluster.fail("patch_quota", TimeoutError("patch ns/team"))
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0)
    now = [100.0]
    context = LoopContext(world, cluster, settings, asyncio.Event())
    controller = RevocationController(context, clock=lambda: now[0])
    await controller.check_once()  # the over-use starts; its record is refused
    assert ANNO_OVER_USED_SINCE not in world.quotas[("ns", "team")].annotations
    now[0] += 1
    await controller.check_once()
    recorded = world.quotas[("ns", "team")].annotations[ANNO_OVER_USED_SINCE]
    assert recorded == format_since(100.0)  # the start, not the time of the retry
    now[0] += 1
    await controller.check_once()
    assert len(cluster.named("patch_quota")) == 2  # refused, then written once


def timed(metrics: Metrics) -> dict[str, dict[str, float]]:
    """The over-use gauges the loop feeds: family -> quota -> value."""
    families = ("elastic_quota_over_used_since_timestamp_seconds",
                "elastic_quota_revocation_min_runtime_seconds")  # fmt: skip
    return {
        family.name: {sample.labels["quota"]: sample.value for sample in family.samples}
        for family in metrics.registry.collect()
        if family.name in families
    }


@pytest.mark.looptime
async def test_the_metrics_show_an_over_use_while_the_loop_times_it(
    world: ControllerState, cluster: FakeCluster
) -> None:
    loop = asyncio.get_running_loop()
    leading = asyncio.Event()
    leading.set()
    metrics = Metrics()
    metrics.watch(world, leading)
    world.results[""] = world.engine.solve_tree("")  # what the tree loops publish
    settings = Settings(revocation_delay=DELAY, revocation_interval=1.0, revocation_min_runtime=45)
    context = LoopContext(world, cluster, settings, leading, metrics)
    controller = RevocationController(context, clock=loop.time)
    start = loop.time()
    async with looping(controller):
        await asyncio.sleep(2)
        shown = timed(metrics)
        assert shown["elastic_quota_revocation_min_runtime_seconds"] == {"team": 45.0}
        assert start <= shown["elastic_quota_over_used_since_timestamp_seconds"]["team"] < start + 1
        world.on_pod_deleted(running("extra", "1", 0))  # the over-use ends
        await asyncio.sleep(SOLVE_EVERY + 2)  # the loop's own solve sees it
        assert all(not quotas for quotas in timed(metrics).values())


def test_the_over_use_summary_quotes_amounts_of_bytes_with_their_suffix() -> None:
    """The QuotaOverUsed and Revoked Events say 30Gi of ephemeral-storage and 26G of memory, not
    32212254720 and 25390625Ki (the API's canonical forms); a resource within its runtime is not
    named."""
    gib = 1024**3
    solved = QuotaEngine().load([Quota("team", "team")]).solve().quotas["team"]
    result = dataclasses.replace(
        solved,
        used={"cpu": 1000, "ephemeral-storage": 30 * gib, "memory": 26 * 10**9},
        runtime={"cpu": 2000, "ephemeral-storage": 20 * gib, "memory": 25 * 10**9},
    )
    assert over_use_summary(result) == (
        "ephemeral-storage used 30Gi > runtime 20Gi, memory used 26G > runtime 25G"
    )
