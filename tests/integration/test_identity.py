"""Who a pod runs for, through the real API server (user and group limits count it).

The operator serves its webhooks in Kopf's managed mode; the test sends requests as other users
(``Impersonate-User``/``-Group``, which the API server puts in the admission request's
``userInfo``). Then: a user's pod carries the user's identity; an identity the user wrote by hand,
ours or YuniKorn's alias, is replaced by the user's own; a Deployment's pod template gets its
creator's identity, and the pods the controllers make from it (ReplicaSet, then Pod, created by
the kube-controller-manager, a trusted requester) carry it; an update of a pod or of the Deployment
that claims another identity is put back.
"""

from __future__ import annotations

import json
from typing import Any

import harness
import pytest
from harness import SUE
from kubernetes_asyncio import client
from webhook_operator import WebhookOperator, running, wait_serving

from elasticquota.core.keys import ANNO_USER_INFO
from elasticquota.core.userlimits.identity import Identity, read_identity
from elasticquota.core.userlimits.stamping import DEFAULT_TRUSTED_USERS

pytestmark = pytest.mark.timeout(300)

ALIAS = "yunikorn.apache.org/user.info"
#: The user of the local control plane's kubeconfig (eqdev.cluster), which its controllers use.
ADMIN = "elastic-quota-admin"


def identity_of(metadata: Any) -> Identity:
    """The pod's identity, without the group every authenticated user is in (the API server adds
    ``system:authenticated`` to an impersonated user's groups)."""
    identity = read_identity(metadata.annotations).identity
    groups = tuple(group for group in identity.groups if group != "system:authenticated")
    return Identity(identity.user, groups)


def deployment(namespace: str, name: str, annotations: dict[str, str]) -> dict[str, Any]:
    pod = harness.pod_manifest(namespace, name, "10m", "16Mi", labels={"app": name})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": pod["spec"],
            },
        },
    }


async def test_pods_and_deployments_run_for_whoever_created_them(
    api: client.ApiClient, as_sue: client.ApiClient, sue_namespace: str
) -> None:
    # The local control plane's controller manager runs with the admin's credentials (a real
    # one runs as system:kube-controller-manager or kube-system's service accounts, trusted by
    # default): trust it too, as a cluster whose controllers run otherwise would.
    controllers = json.dumps([*DEFAULT_TRUSTED_USERS, ADMIN])
    operator = WebhookOperator(env={"ELASTIC_QUOTA_TRUSTED_IDENTITY_USERS": controllers})
    async with running(api, operator):
        await wait_serving(api, operator)
        mine = client.CoreV1Api(as_sue)
        spoofed = '{"user": "admin", "groups": ["platform"]}'
        for key in (ANNO_USER_INFO, ALIAS):
            body = harness.pod_manifest(sue_namespace, harness.unique("pod"), "10m", "16Mi")
            body["metadata"]["annotations"] = {key: spoofed}
            created = await mine.create_namespaced_pod(sue_namespace, body)
            assert identity_of(created.metadata) == SUE, created.metadata.annotations
            print(f"\n{key} claimed admin: the pod runs for {identity_of(created.metadata)}")
        claim = {"metadata": {"annotations": {ANNO_USER_INFO: spoofed}}}
        annotated = await mine.patch_namespaced_pod(created.metadata.name, sue_namespace, claim)
        assert identity_of(annotated.metadata) == SUE, annotated.metadata.annotations

        apps = client.AppsV1Api(as_sue)
        name = harness.unique("web")
        made = await apps.create_namespaced_deployment(
            sue_namespace, deployment(sue_namespace, name, {ANNO_USER_INFO: spoofed})
        )
        assert identity_of(made.spec.template.metadata) == SUE

        async def pods_made() -> list[Any]:
            listed = await client.CoreV1Api(api).list_namespaced_pod(
                sue_namespace, label_selector=f"app={name}"
            )
            return list(listed.items)

        async def one_pod_made() -> bool:
            return len(await pods_made()) == 1

        await harness.eventually(one_pod_made, 60, operator.process, "the Deployment's pod")
        (pod,) = await pods_made()
        assert identity_of(pod.metadata) == SUE, pod.metadata.annotations
        print(f"the Deployment's pod {pod.metadata.name} runs for {identity_of(pod.metadata)}")

        claim = {"spec": {"template": {"metadata": {"annotations": {ANNO_USER_INFO: spoofed}}}}}
        patched = await apps.patch_namespaced_deployment(name, sue_namespace, claim)
        assert identity_of(patched.spec.template.metadata) == SUE
        stamped = json.loads(patched.spec.template.metadata.annotations[ANNO_USER_INFO])
        assert stamped == {"user": "sue", "groups": ["dev", "system:authenticated"]}
