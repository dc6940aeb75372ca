"""The chart's webhooks called as the API server calls them (``test_chart_deployment.py``): every
webhook of the rendered configurations, through the Service's port to the operator's container
port, TLS verified with the caBundle the operator set, with an AdmissionReview of a quota, a pod
or a workload of the webhook's rule.
"""

from __future__ import annotations

import base64
import ssl
import uuid

import aiohttp
from chart_helpers import WEBHOOK_KINDS, one, pod, quota
from chart_pod import Pod
from chart_render import Manifest

from elasticquota.controller.webhooks.identity import WORKLOADS, mutate_workload_id

#: Charted webhooks the suite's API server (Kubernetes 1.20) never calls: CronJobs became batch/v1
#: in 1.21 (the operator registers a batch/v1beta1 handler too, for managed configurations).
NOT_SERVED = {"/mutate-workload-cronjobs"}


def admission_review(webhook: Manifest, namespace: str, body: Manifest) -> Manifest:
    (rule,) = webhook["rules"]
    version = rule["apiVersions"][0]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": rule["apiGroups"][0], "version": version, "kind": body["kind"]},
            "resource": {
                "group": rule["apiGroups"][0],
                "version": version,
                "resource": rule["resources"][0],
            },
            "name": body["metadata"]["name"],
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "test-chart", "groups": ["system:authenticated"]},
            "object": body,
            "oldObject": None,
            "dryRun": True,
        },
    }


def workload(plural: str, name: str, namespace: str) -> Manifest:
    """A workload of ``plural`` (one of ``controller.webhooks.identity.WORKLOADS``) with a pod
    template."""
    (kind,) = [kind for _, each, kind in WORKLOADS if each == plural]
    template = {"metadata": {}, "spec": pod(name, namespace)["spec"]}
    spec: Manifest = {"template": template}
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}
    group = "batch" if kind in ("Job", "CronJob") else "apps"
    return {
        "apiVersion": f"{group}/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def check_webhooks(operator: Pod, namespace: str, ca_bundle: str) -> None:
    """Every webhook of the rendered configurations, called as the API server calls it: through
    the Service's port to the container's, TLS verified with ``ca_bundle`` (what the operator set
    in the configurations) for the Service's name."""
    service = one(operator.manifests, "Service")
    answered = []
    for kind in WEBHOOK_KINDS:
        for webhook in one(operator.manifests, kind)["webhooks"]:
            reference = webhook["clientConfig"]["service"]
            assert reference["name"] == service["metadata"]["name"]
            assert reference["namespace"] == service["metadata"]["namespace"]
            (port,) = [p for p in service["spec"]["ports"] if p["port"] == reference["port"]]
            target = operator.container_port(port["targetPort"])
            host = f"{reference['name']}.{reference['namespace']}.svc"
            context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
            url = f"https://127.0.0.1:{target}{reference['path']}"
            if reference["path"] in NOT_SERVED:
                continue
            name = f"chart-{uuid.uuid4().hex[:6]}"
            resource = webhook["rules"][0]["resources"][0]
            if resource == "pods":
                cases = [(pod(name, namespace), True)]
            elif webhook["name"].startswith("mutate-workload-"):
                cases = [(workload(resource, name, namespace), True)]
            else:
                cases = [(quota(name, namespace, "1", "2"), True)]
                if reference["path"] == "/validate-elasticquota":
                    cases.append((quota(name, namespace, "3", "2"), False))
            async with aiohttp.ClientSession() as session:
                for body, allowed in cases:
                    review = admission_review(webhook, namespace, body)
                    async with session.post(
                        url, json=review, ssl=context, server_hostname=host
                    ) as reply:
                        assert reply.status == 200, await reply.text()
                        response = (await reply.json())["response"]
                    assert response["uid"] == review["request"]["uid"]
                    assert response["allowed"] is allowed, (reference["path"], response)
                    if not allowed:
                        assert response["status"]["code"] == 403
                        assert "min 3 > max 2" in response["status"]["message"], response
                        print(f"{reference['path']}: {response['status']['message']}")
                    if webhook["name"].startswith(("mutate-workload-", "mutate-pod.")):
                        # the requester's identity (admission_review's userInfo) is stamped
                        patch = base64.b64decode(response.get("patch") or "").decode()
                        assert '"user\\":\\"test-chart\\"' in patch, patch
            answered.append(reference["path"])
    assert sorted(answered) == sorted({
        "/mutate-elasticquota", "/mutate-pod", "/validate-elasticquota", "/validate-pod",
        *(f"/{mutate_workload_id(plural)}" for _, plural, _ in WORKLOADS),
    } - NOT_SERVED)  # fmt: skip
