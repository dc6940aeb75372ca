"""The reserved quotas: root, system and default, created at start-up when missing.

Rules (controller/reconcile/reserved.py): the three manifests live in the reserved namespace; the
root is a parent that does not lend and has no parent; system and default hang under the root with
the reference's default max (the engine's ``reference_reserved_max``); only missing ones are created
(with their namespace first), existing objects are never changed, a quota created meanwhile by
someone else (409) is not an error; created objects become the current state.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.api.parse import parse_quota
from elasticquota.controller.reconcile.reserved import (
    ensure_reserved_quotas,
    keep_reserved_quotas,
    reserved_manifests,
)
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import reference_reserved_max

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

NS = "quota-system"


def by_name(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {manifest["metadata"]["name"]: manifest for manifest in manifests}


def test_the_three_reserved_quotas_live_in_the_given_namespace() -> None:
    manifests = by_name(reserved_manifests(NS))
    assert set(manifests) == set(keys.RESERVED_QUOTAS)
    for manifest in manifests.values():
        assert manifest["apiVersion"] == "scheduling.sigs.k8s.io/v1alpha1"
        assert manifest["kind"] == "ElasticQuota"
        assert manifest["metadata"]["namespace"] == NS


def test_the_root_is_a_parent_that_does_not_lend() -> None:
    root = by_name(reserved_manifests(NS))[keys.ROOT_QUOTA]
    assert root["metadata"]["labels"] == {
        keys.LABEL_IS_PARENT: "true",
        keys.LABEL_ALLOW_LENT: "false",
        keys.LABEL_PARENT: "",
    }
    spec, problems = parse_quota(root)
    assert problems == []
    assert (spec.is_parent, spec.allow_lent) == (True, False)


@pytest.mark.parametrize("name", [keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA])
def test_system_and_default_have_the_reference_default_max(name: str) -> None:
    manifest = by_name(reserved_manifests(NS))[name]
    assert manifest["metadata"]["labels"] == {keys.LABEL_PARENT: keys.ROOT_QUOTA}
    spec, problems = parse_quota(manifest)
    assert problems == []
    assert spec.max == reference_reserved_max()  # cpu in cores, as the reference writes it
    assert spec.min == {}


async def test_missing_reserved_quotas_are_created_in_their_namespace(
    state: ControllerState,
    cluster: FakeCluster,
) -> None:
    await ensure_reserved_quotas(cluster, state, NS)

    assert cluster.verbs() == ["ensure_namespace", *["create_quota"] * 3]
    assert cluster.namespaces == {NS}
    assert set(cluster.quotas) == {(NS, name) for name in keys.RESERVED_QUOTAS}
    assert {name for _, name in state.quotas} == set(keys.RESERVED_QUOTAS)
    assert state.quotas[(NS, keys.ROOT_QUOTA)].uid == f"uid-{NS}-{keys.ROOT_QUOTA}"


async def test_existing_reserved_quotas_are_left_alone(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    custom = k8s.quota(keys.DEFAULT_QUOTA, NS, max={"cpu": "10"})
    cluster.store(custom)
    state.on_quota(custom)

    await ensure_reserved_quotas(cluster, state, NS)

    created = [name for verb, _, name, _ in cluster.calls if verb == "create_quota"]
    assert sorted(created) == sorted([keys.ROOT_QUOTA, keys.SYSTEM_QUOTA])
    assert cluster.quotas[(NS, keys.DEFAULT_QUOTA)]["spec"] == {"min": {}, "max": {"cpu": "10"}}


async def test_nothing_is_sent_when_all_exist(
    state: ControllerState,
    cluster: FakeCluster,
) -> None:
    for manifest in reserved_manifests(NS):
        state.on_quota(manifest)
    await ensure_reserved_quotas(cluster, state, NS)
    assert cluster.calls == []


async def test_a_quota_created_meanwhile_by_someone_else_is_not_an_error(
    state: ControllerState,
    cluster: FakeCluster,
) -> None:
    root = by_name(reserved_manifests(NS))[keys.ROOT_QUOTA]
    cluster.store(root)  # the other replica was faster; our watch has not seen it yet

    await ensure_reserved_quotas(cluster, state, NS)

    assert (NS, keys.ROOT_QUOTA) not in state.quotas  # the watch will bring it
    assert {(NS, keys.SYSTEM_QUOTA), (NS, keys.DEFAULT_QUOTA)} <= set(state.quotas)


async def test_a_refused_creation_is_raised(
    state: ControllerState,
    cluster: FakeCluster,
) -> None:
    cluster.fail("create_quota", ApiException(status=403, reason="Forbidden"))
    with pytest.raises(ApiException):
        await ensure_reserved_quotas(cluster, state, NS)


@pytest.mark.looptime
async def test_a_failed_creation_is_tried_again_until_all_exist(
    state: ControllerState,
    cluster: FakeCluster,
) -> None:
    """At a first install the quota webhook (the operator's own) has no ready endpoint yet: the
    API server answers 500 "failed calling webhook". The loop died of it, and the operator with
    it, restarting into the same refusal."""
    webhook_down = ApiException(status=500, reason="Internal Server Error")
    cluster.fail("create_quota", webhook_down, webhook_down)
    state.mark_synced()
    leading = asyncio.Event()
    leading.set()
    loop = asyncio.get_running_loop()
    start = loop.time()

    await asyncio.wait_for(keep_reserved_quotas(cluster, state, NS, leading, retry=1.0), 10)

    assert set(cluster.quotas) == {(NS, name) for name in keys.RESERVED_QUOTAS}
    assert cluster.verbs().count("create_quota") == 5  # two refused, then the three
    assert loop.time() - start == pytest.approx(2.0)  # one retry a second


@pytest.mark.looptime
async def test_the_reserved_quotas_wait_for_the_memory_and_the_lease(
    state: ControllerState,
    cluster: FakeCluster,
) -> None:
    leading = asyncio.Event()
    task = asyncio.create_task(keep_reserved_quotas(cluster, state, NS, leading, retry=1.0))
    await asyncio.sleep(5)
    state.mark_synced()
    await asyncio.sleep(5)
    assert cluster.calls == []  # synced, but not leading: nothing sent
    leading.set()
    await asyncio.wait_for(task, 10)
    assert set(cluster.quotas) == {(NS, name) for name in keys.RESERVED_QUOTAS}
