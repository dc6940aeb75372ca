"""Integration tier: one real local control plane (kube-apiserver + etcd + controller-manager).

The binaries are built (about five minutes on 2 cores, once per machine; cached afterwards) before
the first test runs, right after collection, so that no test's timeout includes the build (``make
test`` builds them in a step of its own before pytest: ``make cluster-binaries``). The session
fixture ``local_cluster`` starts a :class:`~eqdev.cluster.LocalCluster`, applies the CRDs
of ``crds/`` and exports ``KUBECONFIG`` for the whole session. It is autouse here, so every
test in this directory runs against it. If the cluster cannot start, the tests fail with the
reason: a missing control plane must never turn into silently skipped tests.

Every test collected from this directory is marked ``integration``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import harness
import pytest
from chart_helpers import fresh_namespace
from kubernetes_asyncio import client
from proxy import Proxy, target_of

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE
from elasticquota.kube.client import make_api_client
from elasticquota.kube.quotas import PROFILES, QUOTAS
from eqdev.cluster import BuildError, LocalCluster, apply_crds_sync, ensure_binaries

HERE = Path(__file__).resolve().parent
CRD_DIR = HERE.parents[1] / "crds"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.integration)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the control plane (if not cached) before any test and its timeout starts."""
    if not any(HERE in Path(item.path).resolve().parents for item in session.items):
        return
    try:
        ensure_binaries()
    except BuildError as error:
        raise pytest.UsageError(f"the local control plane could not be built: {error}") from error


@pytest.fixture(scope="session", autouse=True)
def local_cluster() -> Iterator[LocalCluster]:
    """One running cluster with the project's CRDs for the session; KUBECONFIG points at it."""
    cluster = LocalCluster()
    problem: str | None = None
    try:
        cluster.start()
        apply_crds_sync(cluster.kubeconfig, CRD_DIR)
    except Exception as error:
        cluster.stop()
        problem = f"the local control plane could not start: {error}"
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    previous = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = str(cluster.kubeconfig)
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = previous
        cluster.stop()


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    """An API client of the session's cluster (a test module may define its own)."""
    api = await make_api_client()
    yield api
    await api.close()


@pytest.fixture
def namespace() -> Iterator[str]:
    """A namespace of the chart's tests (``test_chart_*.py``), deleted after (a test module may
    define its own)."""
    with fresh_namespace(f"eq-chart-{uuid.uuid4().hex[:6]}") as name:
        yield name


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    """A TCP proxy to the session's API server, for fault tests (cut, freeze)."""
    proxy = await Proxy(*target_of(Path(os.environ["KUBECONFIG"]))).start()
    yield proxy
    await proxy.stop()


@pytest.fixture
async def sue_namespace(api: client.ApiClient) -> AsyncIterator[str]:
    """A namespace where user sue may create pods and Deployments (the ``edit`` role)."""
    name = harness.unique("identity")
    await harness.ensure_namespace(api, name)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "sue-edits", "namespace": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "sue"}],
    }
    await client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(name, binding)
    yield name
    await client.CoreV1Api(api).delete_namespace(name)


@pytest.fixture
async def as_sue() -> AsyncIterator[client.ApiClient]:
    """An API client whose requests the API server takes as user sue of group dev."""
    api = await make_api_client()
    api.set_default_header("Impersonate-User", harness.SUE.user)
    api.set_default_header("Impersonate-Group", harness.SUE.groups[0])
    yield api
    await api.close()


# -- every test leaves the cluster as it found it --------------------------------------------------

#: What a test may add to the shared cluster that changes every later test's quota trees (a node
#: adds to the default tree's total, a quota or a pod to its sums). The reserved quotas, made by
#: whichever operator starts first, stay.
ObjectRef = tuple[str, str, str]  # kind, namespace, name
DELETION_ORDER = ("pod", "quota", "profile", "node")


async def _objects(api: client.ApiClient) -> set[ObjectRef]:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    found: set[ObjectRef] = set()
    for node in (await core.list_node()).items:
        found.add(("node", "", node.metadata.name))
    for pod in (await core.list_pod_for_all_namespaces()).items:
        found.add(("pod", pod.metadata.namespace, pod.metadata.name))
    for kind, (group, version, plural) in (("quota", QUOTAS), ("profile", PROFILES)):
        listed = await custom.list_cluster_custom_object(group, version, plural)
        for item in listed["items"]:
            meta = item["metadata"]
            found.add((kind, meta.get("namespace", ""), meta["name"]))
    return found


async def _delete(api: client.ApiClient, ref: ObjectRef) -> None:
    kind, namespace, name = ref
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    try:
        if kind == "node":
            await core.delete_node(name)
        elif kind == "pod":
            await core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        else:
            group, version, plural = QUOTAS if kind == "quota" else PROFILES
            await custom.delete_namespaced_custom_object(group, version, namespace, plural, name)
    except client.exceptions.ApiException as error:
        if error.status != 404:
            raise


@pytest.fixture(autouse=True)
async def leaves_the_cluster_as_found(local_cluster: LocalCluster) -> AsyncIterator[None]:
    """Delete the nodes, pods, quotas and profiles a test created (tests share one cluster and
    some assert exact figures of their trees: a node left behind changes every later total)."""
    api = await make_api_client()
    try:
        before = await _objects(api)
        yield
        created = await _objects(api) - before
        for ref in sorted(created, key=lambda ref: DELETION_ORDER.index(ref[0])):
            if ref[1] != DEFAULT_RESERVED_NAMESPACE:
                await _delete(api, ref)
    finally:
        await api.close()
