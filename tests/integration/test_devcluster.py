"""The local control plane behaves like a real one where the operator depends on it.

Against the session's :class:`~eqdev.cluster.LocalCluster`: it answers ``/readyz`` and
``/version``; both CRDs are Established; an ElasticQuota is validated by its schema, takes merge
patches and has a status subresource; a Pod can be bound to a Node and marked Running (there is no
scheduler or kubelet); the controller-manager deletes namespaces and collects garbage. A second,
short-lived cluster shows that ``stop()`` leaves no process and no run directory behind, also when
``start()`` fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from eqdev.cluster import Binaries, ClusterError, LocalCluster

MERGE_PATCH = "application/merge-patch+json"
EQ = ("scheduling.sigs.k8s.io", "v1alpha1")
EQ_PLURAL = "elasticquotas"
CRD_NAMES = (
    "elasticquotas.scheduling.sigs.k8s.io",
    "elasticquotaprofiles.quota.koordinator.sh",
)
WAIT_SECONDS = 60.0


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _get_json(cluster: LocalCluster, path: str) -> Any:
    request = urllib.request.Request(
        cluster.server + path, headers={"Authorization": f"Bearer {cluster.token}"}
    )
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    with urllib.request.urlopen(request, timeout=5, context=context) as response:
        assert response.status == 200
        body = response.read().decode()
    return json.loads(body) if body.startswith("{") else body


@pytest.fixture
async def api(local_cluster: LocalCluster) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(local_cluster.kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration=configuration) as api_client:
        yield api_client


async def _gone(read: Any, *args: Any) -> bool:
    """Poll ``read(*args)`` until it answers 404; False if it still exists after the wait."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            await read(*args)
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        await asyncio.sleep(0.2)
    return False


# -- the API server itself


def test_readyz_and_version(local_cluster: LocalCluster) -> None:
    assert _get_json(local_cluster, "/readyz") == "ok"
    version = _get_json(local_cluster, "/version")
    assert version["gitVersion"] == f"v{local_cluster.binaries.kubernetes_version}"
    assert local_cluster.server.startswith("https://127.0.0.1:")


def test_kubeconfig_is_exported(local_cluster: LocalCluster) -> None:
    assert os.environ["KUBECONFIG"] == str(local_cluster.kubeconfig)
    assert local_cluster.kubeconfig.is_file()


async def test_crds_are_established(api: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api)
    for name in CRD_NAMES:
        crd = await extensions.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in crd.status.conditions}
        assert conditions.get("Established") == "True", (name, conditions)


# -- ElasticQuota: schema, merge patch, status in the object (no status subresource)


def _elastic_quota(name: str, cpu_min: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "/".join(EQ),
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"min": {"cpu": cpu_min, "memory": "1Gi"}, "max": {"cpu": "4", "memory": "4Gi"}},
    }


async def test_elastic_quota_patch_and_status(api: client.ApiClient) -> None:
    objects = client.CustomObjectsApi(api)
    name = _unique("eq")
    target = (*EQ, "default", EQ_PLURAL, name)
    await objects.create_namespaced_custom_object(*EQ, "default", EQ_PLURAL, _elastic_quota(name))
    try:
        annotation = {"quota.scheduling.koordinator.sh/runtime": '{"cpu":"2"}'}
        patched = await objects.patch_namespaced_custom_object(
            *target, {"metadata": {"annotations": annotation}}, _content_type=MERGE_PATCH
        )
        assert patched["metadata"]["annotations"] == annotation
        assert patched["spec"]["max"] == {"cpu": "4", "memory": "4Gi"}

        # As in Koordinator's CRD: one merge patch of the object carries annotations and status.
        used = {"cpu": "500m", "memory": "256Mi"}
        both = {"metadata": {"annotations": {"k": "v"}}, "status": {"used": used}}
        patched = await objects.patch_namespaced_custom_object(
            *target, both, _content_type=MERGE_PATCH
        )
        assert patched["status"]["used"] == used
        assert patched["metadata"]["annotations"] == {**annotation, "k": "v"}
        current = await objects.get_namespaced_custom_object(*target)
        assert current["status"]["used"] == used

        with pytest.raises(ApiException) as no_subresource:
            await objects.patch_namespaced_custom_object_status(
                *target, {"status": {"used": {"cpu": "9"}}}, _content_type=MERGE_PATCH
            )
        assert no_subresource.value.status == 404
    finally:
        await objects.delete_namespaced_custom_object(*target)


async def test_elastic_quota_schema_is_enforced(api: client.ApiClient) -> None:
    objects = client.CustomObjectsApi(api)
    body = _elastic_quota(_unique("eq-bad"), cpu_min="lots")
    with pytest.raises(ApiException) as raised:
        await objects.create_namespaced_custom_object(*EQ, "default", EQ_PLURAL, body)
    assert raised.value.status == 422


# -- Pods without scheduler and kubelet


async def test_pod_bound_and_running(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    node, pod = _unique("node"), _unique("pod")
    await core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    manifest = {"metadata": {"name": pod}, "spec": {"containers": [container]}}
    await core.create_namespaced_pod("default", manifest)
    try:
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        # The server answers a Status, which the generated V1Binding model cannot deserialize.
        response = await core.create_namespaced_pod_binding(
            pod, "default", binding, _preload_content=False
        )
        assert response.status == 201, await response.text()
        response.release()

        running = {
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }
        await core.patch_namespaced_pod_status(pod, "default", running, _content_type=MERGE_PATCH)
        current = await core.read_namespaced_pod(pod, "default")
        assert current.spec.node_name == node
        assert current.status.phase == "Running"
    finally:
        await core.delete_namespaced_pod(pod, "default", grace_period_seconds=0)
        await core.delete_node(node)


# -- kube-controller-manager


async def test_namespace_deletion(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    namespace = _unique("eq-ns")
    await core.create_namespace({"metadata": {"name": namespace}})
    await core.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}, "data": {}})
    await core.delete_namespace(namespace)
    assert await _gone(core.read_namespace, namespace), "namespace was not finalized"


async def test_garbage_collection(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    owner_name, dependent_name = _unique("owner"), _unique("dependent")
    owner = await core.create_namespaced_config_map("default", {"metadata": {"name": owner_name}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner_name,
        "uid": owner.metadata.uid,
    }
    dependent = {"metadata": {"name": dependent_name, "ownerReferences": [reference]}}
    await core.create_namespaced_config_map("default", dependent)
    await core.delete_namespaced_config_map(owner_name, "default")
    assert await _gone(core.read_namespaced_config_map, dependent_name, "default")


# -- lifecycle of a cluster of its own


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_leaves_nothing_behind(local_cluster: LocalCluster, tmp_path: Path) -> None:
    base = tmp_path / "runs"
    base.mkdir()
    with LocalCluster(local_cluster.binaries, base_dir=base) as cluster:
        pids = cluster.pids
        run_dir = cluster.run_dir
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager"}
        assert cluster.running
        assert _get_json(cluster, "/readyz") == "ok"
    assert not any(_alive(pid) for pid in pids.values())
    assert not run_dir.exists()
    assert list(base.iterdir()) == []
    cluster.stop()  # idempotent
    assert local_cluster.running  # the session's cluster is untouched


def test_failed_start_leaves_nothing_behind(local_cluster: LocalCluster, tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("etcd", "kube-apiserver", "kube-controller-manager"):
        script = fake / name
        script.write_text("#!/bin/sh\necho 'boom: cannot start' >&2\nexit 3\n")
        script.chmod(0o755)
    base = tmp_path / "runs"
    base.mkdir()
    cluster = LocalCluster(Binaries(fake, "0.0.0"), base_dir=base, start_timeout=10)
    with pytest.raises(ClusterError, match="boom: cannot start"):
        cluster.start()
    assert list(base.iterdir()) == []
    assert cluster.pids == {}
