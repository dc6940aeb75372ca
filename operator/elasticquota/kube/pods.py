"""Pod writes: admission gates and conditions. Evictions are in ``kube.evictions``; what a
scheduler and a kubelet do (the demo's node simulation) is development tooling
(``devtools/eqdev/kubelet.py``).
"""

from __future__ import annotations

import datetime

from kubernetes_asyncio import client

from elasticquota.kube.errors import with_retries
from elasticquota.kube.quotas import MERGE_PATCH

STRATEGIC_MERGE = "application/strategic-merge-patch+json"
WAITING_CONDITION = "ElasticQuotaAdmission"


async def set_scheduling_gates(
    api: client.ApiClient, namespace: str, name: str, gates: list[str]
) -> None:
    """Replace the pod's scheduling gates (the API only lets gates be removed)."""
    body = {"spec": {"schedulingGates": [{"name": gate} for gate in gates]}}
    await with_retries(
        lambda: client.CoreV1Api(api).patch_namespaced_pod(
            name, namespace, body, _content_type=MERGE_PATCH
        ),
        f"release Pod {namespace}/{name}",
        attempts=3,
    )


async def set_waiting_condition(
    api: client.ApiClient, namespace: str, name: str, waiting: bool, message: str
) -> None:
    """The pod condition that says whether (and why) it waits for its quota."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": WAITING_CONDITION,
        "status": "False" if waiting else "True",
        "reason": "QuotaExceeded" if waiting else "Admitted",
        "message": message[:1024],
        "lastTransitionTime": now,
    }
    await with_retries(
        lambda: client.CoreV1Api(api).patch_namespaced_pod_status(
            name, namespace, {"status": {"conditions": [condition]}}, _content_type=STRATEGIC_MERGE
        ),
        f"set the admission condition of Pod {namespace}/{name}",
        attempts=3,
    )


def gates_supported(major: str, minor: str) -> bool:
    """Kubernetes 1.27+ keeps ``spec.schedulingGates`` (minor versions may read like ``27+``)."""

    def number(text: str) -> int:
        digits = "".join(ch for ch in text if ch.isdigit())
        return int(digits) if digits else 0

    return (number(major), number(minor)) >= (1, 27)


async def supports_scheduling_gates(api: client.ApiClient) -> tuple[bool, str]:
    """Whether the API server keeps pod scheduling gates, and its version."""
    version = await client.VersionApi(api).get_code()
    return gates_supported(version.major, version.minor), str(version.git_version)
