"""No ghosts after a reconnect: what vanished while the operator could not see is gone from memory.

The operator reaches the API server through a TCP proxy (tests/integration/proxy.py). The link is
cut; meanwhile pods and a quota are deleted directly on the API server (no watch can tell the
operator); the link comes back. Each watch resumes from its resourceVersion and is replayed the
deletions (or, if that version left the API server's window, a level-based relist drops what it no
longer returns): within a few seconds `used` and the annotations are what `plan` computes for the
cluster as it is, and no pod is evicted for resources the deleted pods no longer hold (revocation
runs with a 1-s delay to make any ghost over-use show). The outage is readable in
the operator's log: one WARNING (the kind and the cause) and one INFO (how long) per kind, no
ERROR, no line per retry of the readers or the quota writes.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import harness
import pytest
from kubernetes_asyncio import client
from proxy import Proxy, proxied_kubeconfig

from elasticquota.core import keys
from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION


async def pod_names(api: client.ApiClient, namespace: str) -> set[str]:
    pods = await client.CoreV1Api(api).list_namespaced_pod(namespace)
    return {pod.metadata.name for pod in pods.items}


@pytest.mark.timeout(180)
async def test_objects_deleted_while_the_link_was_cut_leave_memory_and_nothing_is_evicted(
    api: client.ApiClient, proxy: Proxy, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    team, other = f"ghost-team-{suffix}", f"ghost-other-{suffix}"
    for namespace in (team, other):
        await harness.ensure_namespace(api, namespace)
    await apply_manifest(api, harness.node_manifest(f"ghost-node-{suffix}", "64", "256Gi"))
    await apply_manifest(api, harness.quota_manifest(team, team, {"cpu": "2"}, {"cpu": "8"}))
    await apply_manifest(api, harness.quota_manifest(other, other, {"cpu": "1"}, {"cpu": "4"}))
    node = f"ghost-node-{suffix}"
    for index in range(4):
        await apply_manifest(api, harness.pod_manifest(team, f"run-{index}", "2", node=node))
    await apply_manifest(api, harness.pod_manifest(other, "run-0", "1", node=node))

    kubeconfig = proxied_kubeconfig(Path(os.environ["KUBECONFIG"]), proxy.port, tmp_path / "kc")
    operator = harness.OperatorProcess(
        f"ghost-{suffix}", "--revocation-delay", "1", env={"KUBECONFIG": str(kubeconfig)}
    ).start()
    try:
        await operator.wait_ready()
        await operator.wait_active()
        await harness.until_converged(api, 60, operator, "converged before the cut")
        assert (await harness.get_quota(api, team, team))["status"]["used"] == {"cpu": "8"}

        proxy.cut()
        core = client.CoreV1Api(api)
        for name in ("run-0", "run-1", "run-2"):
            await core.delete_namespaced_pod(name, team, grace_period_seconds=0)
        await client.CustomObjectsApi(api).delete_namespaced_custom_object(
            QUOTA_GROUP, QUOTA_VERSION, other, QUOTA_PLURAL, other
        )
        await harness.eventually(
            lambda: (operator.probe("/readyz") or {}).get("ready") is False,
            30,
            operator,
            "not ready while the API server cannot be reached",
        )
        proxy.restore()

        await operator.wait_ready(30)
        await harness.until_converged(api, 15, operator, "converged after the reconnect")
        used = (await harness.get_quota(api, team, team))["status"]["used"]
        assert used == {"cpu": "2"}  # the three deleted pods no longer count
        annotations = (await harness.get_quota(api, team, team))["metadata"]["annotations"]
        assert keys.ANNO_RUNTIME in annotations
        assert await pod_names(api, team) == {"run-3"}  # nothing evicted
        assert await pod_names(api, other) == {"run-0"}
    finally:
        await asyncio.to_thread(operator.stop)  # the proxy (on this loop) serves its last calls
    log = operator.log.read_text(errors="replace")
    for kind in harness.READER_KINDS:
        assert harness.reader_outage_lines(log, kind) == (1, 1), f"{kind}\n{log[-6000:]}"
    assert log.count("quota writes failing") <= 1, log[-6000:]
    assert " ERROR " not in log and "Traceback" not in log, log[-6000:]
