"""The Events about a pod name its uid when the operator has read it, as the eviction does
before evicting: ``kubectl describe pod`` lists only the Events whose involvedObject has the
pod's uid (its field selector names it), so a pod a PodDisruptionBudget kept (RevocationBlocked)
or an eviction that failed after the read (RevocationFailed, PreemptionFailed) shows why there.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_cluster import FakeCluster
from kubernetes_asyncio.client.exceptions import ApiException
from revocation_rounds import delayed_round
from team_pods import team_of_four, team_pod

from elasticquota.controller.context import LoopContext
from elasticquota.controller.enforcement.gating import GateController
from elasticquota.controller.state import ControllerState
from elasticquota.kube.evictions import EvictionOutcome
from elasticquota.settings import Settings

CREATED = "2026-11-27T10:00:00Z"
DELAY = 30.0


@pytest.fixture
def world() -> ControllerState:
    return team_of_four()


def known(world: ControllerState, cluster: FakeCluster, body: dict[str, Any]) -> None:
    """A pod the operator holds in memory and the cluster holds, with a uid, created at
    ``CREATED``."""
    body["metadata"]["creationTimestamp"] = CREATED
    world.on_pod(body)
    cluster.store(
        {**body, "metadata": {**body["metadata"], "uid": f"uid-{body['metadata']['name']}"}}
    )


def about(cluster: FakeCluster, reason: str) -> dict[str, str]:
    """The involvedObject of the one Event of ``reason``."""
    (event,) = [event for event in cluster.events if event["reason"] == reason]
    involved: dict[str, str] = event["involvedObject"]
    return involved


async def revocation_round(world: ControllerState, cluster: FakeCluster) -> None:
    """Quota ``team`` (4 cpu) uses 5: ``extra`` (1 cpu, the lowest priority) is its victim."""
    known(world, cluster, team_pod("keep", "4", 9, node="n1"))
    known(world, cluster, team_pod("extra", "1", 0, node="n1"))
    await delayed_round(world, cluster, DELAY)
    assert cluster.named("evict") == ["extra"]


async def test_the_revoked_event_names_the_uid_of_the_pod_evicted(
    world: ControllerState, cluster: FakeCluster
) -> None:
    await revocation_round(world, cluster)
    assert about(cluster, "Revoked") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "extra",
        "uid": "uid-extra",
    }


async def test_the_blocked_event_names_the_uid_of_the_pod_kept(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The pod stays: ``kubectl describe pod`` is where its user looks."""
    cluster.evictions_end(EvictionOutcome.BLOCKED)
    await revocation_round(world, cluster)
    assert about(cluster, "RevocationBlocked")["uid"] == "uid-extra"
    (told,) = [event["message"] for event in cluster.events if event["reason"] != "QuotaOverUsed"]
    assert told == (  # which quota's over-use it was to go for, as well as why it stays
        "a PodDisruptionBudget refused the eviction for quota team's over-use; "
        "the next round tries again"
    )


async def test_the_failed_event_names_the_uid_of_the_pod_kept(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The API server refused the eviction (not a budget): the pod stays, and its user reads
    the error on it."""
    cluster.fail("evict", ApiException(status=403, reason="Forbidden"))
    await revocation_round(world, cluster)
    (event,) = [event for event in cluster.events if event["reason"] == "RevocationFailed"]
    assert event["involvedObject"]["uid"] == "uid-extra"
    assert event["message"] == "the eviction for quota team's over-use failed: HTTP 403: Forbidden"


async def test_the_preempted_event_names_the_uid_of_the_pod_evicted(
    world: ControllerState, cluster: FakeCluster
) -> None:
    known(world, cluster, team_pod("low", "4", 0, node="n1"))
    known(world, cluster, team_pod("new", "2", 5, gated=True))
    await GateController(LoopContext(world, cluster, Settings(), asyncio.Event())).step()
    assert cluster.named("evict") == ["low"]
    assert about(cluster, "PreemptedInQuota") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "low",
        "uid": "uid-low",
    }


async def test_the_preemption_failed_event_names_the_uid_of_the_pod_kept(
    world: ControllerState, cluster: FakeCluster
) -> None:
    """The API server refused the eviction of ``new``'s victim: ``low`` stays, and its user
    reads on it the error and the pod it was to make room for."""
    known(world, cluster, team_pod("low", "4", 0, node="n1"))
    known(world, cluster, team_pod("new", "2", 5, gated=True))
    cluster.fail("evict", ApiException(status=403, reason="Forbidden"))
    await GateController(LoopContext(world, cluster, Settings(), asyncio.Event())).step()
    assert cluster.named("evict") == ["low"]
    assert about(cluster, "PreemptionFailed")["uid"] == "uid-low"
