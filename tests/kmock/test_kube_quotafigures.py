"""kube.quotafigures against KMock: how a quota's annotations and ``status.used`` are sent.

Rules (kube/quotafigures.py, through ``KubeCluster.write_quota``): where the ElasticQuota CRD has
no status subresource (Koordinator's, scheduler-plugins', this project's), one JSON merge patch of
the object carries both; where it has one, the annotations go to the object and ``status.used``
to ``/status``. The route is learned from the answers: an object patch whose answer does not show
the ``used`` it carried switches to ``/status`` (and sends it there at once), a 404 from
``/status`` for a quota that a patch of the object then finds switches back. KMock's default
PATCH merges into the object whatever the URL (a CRD without a status subresource, except that
``/status`` answers too); ``as_crd`` answers as a CRD with one, or refuses ``/status`` with 404
as one without.
"""

from __future__ import annotations

import copy
from typing import Any

import kmock
import pytest
from kmock import KubernetesError
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.core import keys
from elasticquota.kube.cluster import KubeCluster
from elasticquota.kube.quotafigures import figures_patch, holds_used

QUOTAS = "scheduling.sigs.k8s.io/v1alpha1/elasticquotas"
QUOTA_URL = "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/team/elasticquotas/a"
STATUS_URL = f"{QUOTA_URL}/status"
REQUEST = {keys.ANNO_REQUEST: '{"cpu":"2"}'}


@pytest.fixture(autouse=True)
def quota(kmock: kmock.KubernetesEmulator) -> None:
    kmock.objects[QUOTAS, "team", "a"] = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "a", "namespace": "team", "uid": "uid-a"},
        "spec": {"max": {"cpu": "4", "nvidia.com/gpu": "2"}},
        "status": {"used": {"cpu": "1", "nvidia.com/gpu": "1"}},
    }


def as_crd(server: kmock.KubernetesEmulator, status_subresource: bool) -> None:
    """PATCHes answered as by a CRD with a status subresource (the object's own patch leaves the
    status as it was, ``/status`` changes the status only) or without one (``/status`` answers
    404 and changes nothing)."""
    held = {"status": copy.deepcopy(server.objects[QUOTAS, "team", "a"].raw["status"])}

    def patch(request: kmock.Request) -> dict[str, Any]:
        stored = copy.deepcopy(server.objects[QUOTAS, "team", "a"].raw)  # KMock merged it all
        to_status = request.subresource == "status"
        if to_status == status_subresource:
            held["status"] = copy.deepcopy(stored["status"])
        else:
            stored["status"] = copy.deepcopy(held["status"])
            server.objects[QUOTAS, "team", "a"] = stored
        if to_status and not status_subresource:
            raise KubernetesError(404, "NotFound", "the server could not find the resource")
        return stored

    server["patch"] << patch


def annotated(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations}}


def using(**used: str) -> dict[str, Any]:
    return {"status": {"used": used}}


def through(api: client.ApiClient, status: bool) -> KubeCluster:
    """The adapter, beginning with the route through ``/status`` or not."""
    cluster = KubeCluster(api)
    cluster.quota_figures.through_status = status
    return cluster


def sent(server: kmock.KubernetesEmulator, start: int = 0) -> list[tuple[str, Any]]:
    """(path, body) of each request from ``start`` on."""
    return [(request.url.path, request.data) for request in list(server)[start:]]


async def test_without_a_status_subresource_one_patch_carries_both(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    cluster = KubeCluster(api)
    used = {"cpu": "2", "nvidia.com/gpu": None}

    body = await cluster.write_quota("team", "a", REQUEST, used)

    assert sent(kmock) == [(QUOTA_URL, figures_patch(REQUEST, used))]
    assert sent(kmock)[0][1] == {"metadata": {"annotations": REQUEST}, "status": {"used": used}}
    assert body["status"]["used"] == {"cpu": "2"}
    assert body["metadata"]["annotations"] == REQUEST
    assert not cluster.quota_figures.through_status


async def test_annotations_alone_or_status_alone_send_only_that(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    cluster = KubeCluster(api)

    await cluster.write_quota("team", "a", REQUEST, None)
    await cluster.write_quota("team", "a", {}, {"cpu": "3"})

    assert sent(kmock) == [(QUOTA_URL, annotated(REQUEST)), (QUOTA_URL, using(cpu="3"))]


async def test_a_status_subresource_is_learned_from_the_first_answer_and_used_from_then_on(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    as_crd(kmock, status_subresource=True)
    cluster = KubeCluster(api)

    body = await cluster.write_quota("team", "a", REQUEST, {"cpu": "2"})

    assert sent(kmock) == [
        (QUOTA_URL, {**annotated(REQUEST), **using(cpu="2")}),
        (STATUS_URL, using(cpu="2")),
    ]
    assert body["status"]["used"] == {"cpu": "2", "nvidia.com/gpu": "1"}
    assert body["metadata"]["annotations"] == REQUEST
    assert cluster.quota_figures.through_status

    later = {keys.ANNO_REQUEST: '{"cpu":"3"}'}
    await cluster.write_quota("team", "a", later, {"cpu": "3"})

    assert sent(kmock, 2) == [(QUOTA_URL, annotated(later)), (STATUS_URL, using(cpu="3"))]


async def test_a_404_from_status_sends_it_with_the_object_and_switches_back(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient
) -> None:
    as_crd(kmock, status_subresource=False)
    cluster = through(api, True)

    body = await cluster.write_quota("team", "a", REQUEST, {"cpu": "2"})

    assert sent(kmock) == [
        (QUOTA_URL, annotated(REQUEST)),
        (STATUS_URL, using(cpu="2")),
        (QUOTA_URL, using(cpu="2")),
    ]
    assert body["status"]["used"] == {"cpu": "2", "nvidia.com/gpu": "1"}
    assert not cluster.quota_figures.through_status

    await cluster.write_quota("team", "a", {}, {"cpu": "3"})
    assert sent(kmock, 3) == [(QUOTA_URL, using(cpu="3"))]


@pytest.mark.parametrize("through_status", [False, True])
async def test_a_quota_that_is_gone_is_a_404_and_teaches_nothing(
    kmock: kmock.KubernetesEmulator, api: client.ApiClient, through_status: bool
) -> None:
    del kmock.objects[QUOTAS, "team", "a"]
    cluster = through(api, through_status)

    with pytest.raises(ApiException) as raised:
        await cluster.write_quota("team", "a", {}, {"cpu": "2"})

    assert raised.value.status == 404
    assert cluster.quota_figures.through_status is through_status


def test_holds_used_reads_a_merge_patch_as_applied() -> None:
    body = {"status": {"used": {"cpu": "2"}}}
    assert holds_used(body, {"cpu": "2", "memory": None})
    assert not holds_used(body, {"cpu": "3"})
    assert not holds_used(body, {"cpu": None})
    assert not holds_used({}, {"cpu": "2"})
    assert holds_used({"status": None}, {})
