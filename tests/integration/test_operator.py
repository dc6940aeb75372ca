"""The operator against a real kube-apiserver: what it writes converges to what ``plan`` computes.

Each test starts its own operator process(es) and uses its own namespaces and quota names; the
cluster (and the reserved quotas the first operator creates) is shared by the session.
"""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from collections.abc import Iterator

import harness
import pytest
from kubernetes_asyncio import client
from profile_bodies import profile_body
from prometheus_client.parser import text_string_to_metric_families

from elasticquota.cli.cluster import ClusterTarget
from elasticquota.cli.tree_command import draw
from elasticquota.core import keys
from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.quotas import list_quotas, patch_quota
from eqdev.kubelet import bind_pod, mark_running

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def operator() -> Iterator[harness.OperatorProcess]:
    process = harness.OperatorProcess(f"op-{uuid.uuid4().hex[:6]}").start()
    yield process
    process.stop()


async def small_tree(api: client.ApiClient, prefix: str) -> tuple[str, str, str, str]:
    """A parent with two leaves in a namespace of their own, plus one node (names made unique):
    (namespace, parent, left, right)."""
    namespace = harness.unique(prefix)
    await harness.ensure_namespace(api, namespace)
    parent, left, right = harness.unique("dept"), harness.unique("team-a"), harness.unique("team-b")
    await apply_manifest(api, harness.node_manifest(harness.unique("node"), "8", "32Gi"))
    await apply_manifest(
        api, harness.quota_manifest(namespace, parent, {"cpu": "4"}, {"cpu": "8"}, is_parent=True)
    )
    for leaf in (left, right):
        await apply_manifest(
            api, harness.quota_manifest(namespace, leaf, {"cpu": "2"}, {"cpu": "8"}, parent=parent)
        )
    return namespace, parent, left, right


async def test_examples_converge_to_plan_and_follow_pod_changes(
    api: client.ApiClient, operator: harness.OperatorProcess
) -> None:
    await operator.wait_ready()
    await harness.apply_examples(api)
    await harness.until_converged(api, 60, operator, "examples converged to plan")

    await assert_no_operator_bookkeeping(api)
    ml = await harness.get_quota(api, "ml-research", "ml-research")
    assert ml["metadata"]["annotations"][keys.ANNO_RUNTIME] == '{"cpu":"28571m","memory":"80Gi"}'
    assert ml["status"]["used"] == {"cpu": "40", "memory": "80Gi"}
    assert_metrics_show_what_was_written(operator)

    await bind_pod(api, "analytics", "report-2", "node-3")
    await mark_running(api, "analytics", "report-2")
    await client.CoreV1Api(api).delete_namespaced_pod(
        "train-5", "ml-research", grace_period_seconds=0
    )
    await harness.until_converged(api, 30, operator, "converged after bind + delete")
    analytics = await harness.get_quota(api, "analytics", "analytics")
    assert analytics["status"]["used"]["cpu"] == "16"

    # `elastic-quota tree` draws what the operator wrote, in plan's layout
    tree = (await draw(ClusterTarget(None, None, None), None)).text  # -A
    ml_row = next(line for line in tree.splitlines() if line.strip().startswith("ml-research"))
    assert ml_row.split()[1:] == ["cpu", "16", "48", "32", "32!", "28.571"]  # over its runtime


def scraped(operator: harness.OperatorProcess, name: str, **labels: str) -> float | None:
    """The first sample of ``name`` with these labels on the operator's ``/metrics``."""
    url = f"http://127.0.0.1:{operator.port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return float(sample.value)
    return None


def assert_metrics_show_what_was_written(operator: harness.OperatorProcess) -> None:
    """The active replica's /metrics: its version, and the runtime it wrote (cores, bytes)."""
    assert scraped(operator, "elastic_quota_info") == 1.0
    assert scraped(operator, "elastic_quota_leader") == 1.0
    assert scraped(operator, "elastic_quota_ready") == 1.0
    ml = {"quota": "ml-research", "namespace": "ml-research"}
    assert scraped(operator, "elastic_quota_runtime", resource="cpu", **ml) == 28.571
    assert scraped(operator, "elastic_quota_runtime", resource="memory", **ml) == 80 * 2**30
    assert scraped(operator, "elastic_quota_used", resource="cpu", **ml) == 40.0
    assert (scraped(operator, "elastic_quota_reconcile_seconds_count") or 0) > 0


async def assert_no_operator_bookkeeping(api: client.ApiClient) -> None:
    """No finalizers and no Kopf annotations on objects the operator does not own."""
    core = client.CoreV1Api(api)
    objects = [
        *(await core.list_pod_for_all_namespaces()).items,
        *(await core.list_node()).items,
    ]
    for item in objects:
        assert not item.metadata.finalizers, item.metadata.name
        assert not any("kopf" in key for key in item.metadata.annotations or {}), item.metadata.name
    for quota in await list_quotas(api):
        metadata = quota["metadata"]
        assert not metadata.get("finalizers"), metadata["name"]
        assert not any("kopf" in key for key in metadata.get("annotations") or {}), metadata


async def test_quota_moved_to_another_parent(
    api: client.ApiClient, operator: harness.OperatorProcess
) -> None:
    namespace, _, left, _ = await small_tree(api, "move")
    other = harness.unique("dept")
    await apply_manifest(
        api, harness.quota_manifest(namespace, other, {"cpu": "4"}, {"cpu": "8"}, is_parent=True)
    )
    await apply_manifest(
        api, harness.pod_manifest(namespace, "p1", "3", labels={keys.POD_LABEL_QUOTA: left})
    )
    await operator.wait_ready()
    await harness.until_converged(api, 60, operator, "small tree converged")
    before = await harness.get_quota(api, namespace, other)
    assert '"cpu":"0"' in before["metadata"]["annotations"][keys.ANNO_CHILD_REQUEST]

    await patch_quota(api, namespace, left, {"metadata": {"labels": {keys.LABEL_PARENT: other}}})
    await harness.until_converged(api, 30, operator, "converged after the move")
    after = await harness.get_quota(api, namespace, other)
    assert after["metadata"]["annotations"][keys.ANNO_CHILD_REQUEST] == '{"cpu":"3"}'


async def test_profile_tree_follows_its_nodes(
    api: client.ApiClient, operator: harness.OperatorProcess
) -> None:
    namespace, pool = harness.unique("pool"), harness.unique("pool")
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(
        api, harness.node_manifest(harness.unique("gpu"), "16", "64Gi", {"pool": pool})
    )
    await apply_manifest(
        api, profile_body("profile", namespace, quota_name="pool-root", match_labels={"pool": pool})
    )
    await operator.wait_ready()

    async def root_min_cpu(expected: str) -> bool:
        try:
            root = await harness.get_quota(api, namespace, "pool-root")
        except client.ApiException:
            return False
        return root["spec"].get("min", {}).get("cpu") == expected and await harness.converged(api)

    await harness.eventually(
        lambda: root_min_cpu("16"), 60, operator, "root quota created with 16 cpu"
    )
    second = harness.unique("gpu")
    await apply_manifest(api, harness.node_manifest(second, "16", "64Gi", {"pool": pool}))
    await harness.eventually(lambda: root_min_cpu("32"), 30, operator, "root quota grew to 32 cpu")
    await client.CoreV1Api(api).delete_node(second)
    await harness.eventually(
        lambda: root_min_cpu("16"), 30, operator, "root quota shrank to 16 cpu"
    )
    root = await harness.get_quota(api, namespace, "pool-root")
    assert root["metadata"]["labels"][keys.LABEL_IS_ROOT] == "true"
    assert root["metadata"]["annotations"][keys.ANNO_TOTAL_RESOURCE].startswith('{"cpu":"16"')


async def test_an_ignored_profile_shows_its_event_where_kubectl_describe_looks(
    api: client.ApiClient, operator: harness.OperatorProcess
) -> None:
    """Two profiles naming one root quota: the second is ignored, with an Event that names its
    uid (``kubectl describe`` selects Events by the object's kind, name, namespace and uid)."""
    namespace, pool = harness.unique("twice"), harness.unique("pool")
    await harness.ensure_namespace(api, namespace)
    for name in ("a", "b"):
        body = profile_body(name, namespace, quota_name="root", match_labels={"pool": pool})
        await apply_manifest(api, body)
    profile = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        keys.PROFILE_GROUP, "v1alpha1", namespace, "elasticquotaprofiles", "b"
    )
    describe = (
        f"involvedObject.name=b,involvedObject.namespace={namespace},"
        f"involvedObject.kind={keys.PROFILE_KIND},involvedObject.uid={profile['metadata']['uid']}"
    )
    await operator.wait_ready()

    async def described() -> bool:
        events = await client.CoreV1Api(api).list_namespaced_event(
            namespace, field_selector=describe
        )
        return [event.reason for event in events.items] == ["ProfileIgnored"]

    await harness.eventually(described, 60, operator, "ProfileIgnored listed for profile b")


async def test_broken_quota_gets_an_event_and_the_others_are_still_written(
    api: client.ApiClient, operator: harness.OperatorProcess
) -> None:
    namespace, _, left, _ = await small_tree(api, "broken")
    orphan = harness.unique("orphan")
    await apply_manifest(
        api,
        harness.quota_manifest(
            namespace, orphan, {"cpu": "1"}, {"cpu": "2"}, parent="no-such-parent"
        ),
    )
    await operator.wait_ready()
    await harness.until_converged(api, 60, operator, "valid quotas written")

    async def event_posted() -> bool:
        events = await client.CoreV1Api(api).list_namespaced_event(namespace)
        return any(
            event.involved_object.name == orphan
            and event.reason == "InvalidElasticQuota"
            and "no-such-parent" in event.message
            for event in events.items
        )

    await harness.eventually(event_posted, 30, operator, "Event on the broken quota")
    leaf = await harness.get_quota(api, namespace, left)
    assert keys.ANNO_RUNTIME in leaf["metadata"]["annotations"]
    broken = await harness.get_quota(api, namespace, orphan)
    assert keys.ANNO_RUNTIME not in (broken["metadata"].get("annotations") or {})


async def test_restart_converges_without_redundant_writes(api: client.ApiClient) -> None:
    namespace, _, left, right = await small_tree(api, "restart")
    await apply_manifest(
        api, harness.pod_manifest(namespace, "p1", "3", labels={keys.POD_LABEL_QUOTA: left})
    )
    async with harness.active_operator(harness.unique("first")) as first:
        await harness.until_converged(api, 60, first, "converged before the restart")
    versions = await harness.resource_versions(api)

    async with harness.active_operator(harness.unique("second")) as second:
        await harness.until_converged(api, 30, second, "converged after the restart")
        await asyncio.sleep(3)  # several reconcile intervals: any write would show by now
        assert await harness.resource_versions(api) == versions, await harness.mismatches(api)

        # and it still follows changes
        await apply_manifest(
            api, harness.pod_manifest(namespace, "p2", "1", labels={keys.POD_LABEL_QUOTA: right})
        )
        await harness.until_converged(api, 30, second, "converged after a new pod")


async def test_standby_replica_takes_over(api: client.ApiClient) -> None:
    namespace, _, left, _ = await small_tree(api, "standby")
    one = harness.OperatorProcess(harness.unique("one")).start()
    two = harness.OperatorProcess(harness.unique("two")).start()
    try:
        await one.wait_ready()
        await two.wait_ready()
        await harness.eventually(lambda: one.active or two.active, 30, one, "a replica is active")
        assert not (one.active and two.active)
        active, standby = (one, two) if one.active else (two, one)
        await harness.until_converged(api, 60, active, "converged with the active replica")

        active.kill()  # a crash: the Lease is not released
        await standby.wait_active(timeout=30)
        await apply_manifest(
            api, harness.pod_manifest(namespace, "late", "2", labels={keys.POD_LABEL_QUOTA: left})
        )
        await harness.until_converged(api, 30, standby, "the standby writes after take-over")
    finally:
        one.stop()
        two.stop()
