"""NameRecorder: the owner of a quota name other quotas share gets its name record, once.

Rules (controller/reconcile/names.py): for each shared name whose owner lacks
``elasticquota.dev/name-owner`` = its own uid, the active replica merge-patches that annotation
onto the owner and feeds the answer back into memory; nothing for unshared names, nothing in
dry-run; a refused patch is tried again at the next round.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.cluster import DryRunCluster
from elasticquota.controller.reconcile.names import NameRecorder
from elasticquota.controller.state import ControllerState
from elasticquota.core.keys import ANNO_NAME_OWNER
from elasticquota.kube.fence import NotLeadingError

if TYPE_CHECKING:
    from conftest import Bodies
    from fake_cluster import FakeCluster

SECOND = "2026-11-25T10:00:00Z"


def l2(k8s: Bodies, namespace: str, name: str = "l2") -> dict[str, Any]:
    body = k8s.quota(name, namespace, max={"cpu": "4"})
    body["metadata"]["creationTimestamp"] = SECOND
    return body


def shared_name(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, name: str = "l2"
) -> None:
    """``base/l2`` seen (and solved) first; ``bad/l2`` arrives in the same second."""
    state.on_quota(cluster.store(l2(k8s, "base", name)))
    state.engine.solve()
    state.on_quota(cluster.store(l2(k8s, "bad", name)))


async def test_the_owner_of_a_shared_name_is_recorded_once(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    state.on_quota(cluster.store(k8s.quota("alone", max={"cpu": "1"})))
    recorder = NameRecorder(state, cluster)
    assert await recorder.record() == 0  # no shared name: nothing to record

    shared_name(state, cluster, k8s)
    assert await recorder.record() == 1
    assert await recorder.record() == 0

    patch = {"metadata": {"annotations": {ANNO_NAME_OWNER: "uid-base-l2"}}}
    assert cluster.writes() == [("patch_quota", "base", "l2", patch)]
    assert state.quotas[("base", "l2")].annotations[ANNO_NAME_OWNER] == "uid-base-l2"
    assert state.engine.name_owner("l2") == "base"


async def test_dry_run_records_nothing_and_says_so_once(
    state: ControllerState,
    cluster: FakeCluster,
    k8s: Bodies,
    caplog: pytest.LogCaptureFixture,
) -> None:
    shared_name(state, cluster, k8s)
    recorder = NameRecorder(state, DryRunCluster())
    with caplog.at_level(logging.INFO, logger="elasticquota.controller"):
        assert await recorder.record() == 0
        assert await recorder.record() == 0
    assert cluster.writes() == []
    assert ANNO_NAME_OWNER not in state.quotas[("base", "l2")].annotations
    patch = {"metadata": {"annotations": {ANNO_NAME_OWNER: "uid-base-l2"}}}
    assert [record.getMessage() for record in caplog.records] == [
        f"dry-run: would write base/l2: {patch}"
    ]


async def test_a_refused_record_is_tried_again(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    shared_name(state, cluster, k8s)
    cluster.fail("patch_quota", ApiException(status=500, reason="etcd down"))
    recorder = NameRecorder(state, cluster)
    assert await recorder.record() == 0
    assert await recorder.record() == 1


async def test_an_outage_is_logged_once_not_at_every_round(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, caplog: pytest.LogCaptureFixture
) -> None:
    """The API server unavailable for three rounds: one WARNING when the record first fails, one
    INFO when it goes through; the rounds between say nothing above DEBUG."""
    shared_name(state, cluster, k8s)
    cluster.fail("patch_quota", *[ApiException(status=503, reason="Service Unavailable")] * 3)
    recorder = NameRecorder(state, cluster)
    with caplog.at_level(logging.INFO, logger=NameRecorder.__module__):
        assert [await recorder.record() for _ in range(4)] == [0, 0, 0, 1]
    said = [record.getMessage() for record in caplog.records]
    assert said[0] == (
        "name owner records failing (ElasticQuota base/l2: HTTP 503: Service Unavailable); retrying"
    )
    assert said[1].startswith("name owner records succeed again after ")
    assert said[2:] == [
        f"ElasticQuota base/l2 owns the quota name 'l2' that other quotas share: "
        f"recorded ({ANNO_NAME_OWNER})"
    ]


async def test_an_owner_whose_spec_breaks_still_owns_its_name(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    shared_name(state, cluster, k8s)
    broken = l2(k8s, "base")
    broken["spec"] = {"min": {"cpu": "8"}, "max": {"cpu": "4"}}  # min > max: left out
    state.on_quota(broken)

    state.engine.solve()
    assert state.engine.name_owner("l2") == "base"
    assert "l2" not in state.engine.solve().quotas
    assert await NameRecorder(state, cluster).record() == 1  # recorded all the same


async def test_a_lost_lease_ends_the_round(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    """Every other record would be refused too: no attempt (and no warning) for each owner."""
    shared_name(state, cluster, k8s)
    shared_name(state, cluster, k8s, "m2")
    cluster.fail("patch_quota", NotLeadingError("not sent"), NotLeadingError("not sent"))
    assert await NameRecorder(state, cluster).record() == 0
    assert cluster.named("patch_quota") == ["l2"]
