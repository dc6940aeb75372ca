"""Benchmark of the pod webhooks' answer to a new pod: the mutating answer's JSON patch as Kopf
makes it and as the operator's server makes it, and the whole answer of mutate-pod.

The mutate-pod webhook changes a few keys of each pod created (the identity annotations, the
profile's node affinity, the admission gate). Kopf turns that merge patch into the answer's JSON
patch by applying it to a deep copy of the whole pod and diffing the pod with the copy
(``kopf.Patch.as_json_patch``); the server makes it along the patched paths only
(``controller.webhooks.patches.json_patch``). Side by side on pods as the API server sends them
on a CREATE (defaults filled in, managed fields, the service account's projected volume), with 1,
4 and 16 containers; then the server's whole answer of mutate-pod to one of them
(``direct.answer_review``: the handler over a synced memory of 1,000 quotas and the JSON patch,
what the event loop spends on a review after reading it). Prints one line per pod size:

    patch containers=C pod_kb=K kopf_ms=K patch_ms=P ratio=X answer_ms=A

with medians of many runs (milliseconds of the event loop per pod created).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import statistics
import time
from collections.abc import Callable
from typing import Any, cast

import kopf

from elasticquota.controller.runner import make_state
from elasticquota.controller.webhooks.direct import answer_review
from elasticquota.controller.webhooks.patches import json_patch
from elasticquota.controller.webhooks.registration import register_webhooks
from elasticquota.core import keys
from elasticquota.settings import Settings

CONTAINERS = (1, 4, 16)
RUNS = 400
QUOTAS = 1_000


def container(index: int) -> dict[str, Any]:
    """A container as the API server's defaults leave it."""
    return {
        "name": f"worker-{index}",
        "image": "registry.example/team/worker:1.4.2",
        "args": ["--config", "/etc/worker/config.yaml", "--port", str(8080 + index)],
        "env": [{"name": f"SETTING_{n}", "value": f"value-{n}"} for n in range(8)],
        "ports": [{"containerPort": 8080 + index, "protocol": "TCP", "name": "http"}],
        "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi"},
            "limits": {"cpu": "1", "memory": "2Gi"},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/worker", "readOnly": True},
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }


def managed_fields(containers: int) -> list[dict[str, Any]]:
    """What a controller's server-side apply bookkeeping adds to a pod it creates."""
    fields: dict[str, Any] = {
        f"k:{{\"name\":\"worker-{index}\"}}": {
            ".": {}, "f:args": {}, "f:env": {".": {}}, "f:image": {}, "f:imagePullPolicy": {},
            "f:name": {}, "f:ports": {".": {}}, "f:resources": {".": {}, "f:limits": {},
            "f:requests": {}}, "f:volumeMounts": {".": {}},
        }
        for index in range(containers)
    }  # fmt: skip
    return [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-29T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}}},
                         "f:spec": {"f:containers": fields}},
        }
    ]  # fmt: skip


def pod(containers: int) -> dict[str, Any]:
    """A new pod of a Job's, as a CREATE review carries it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "train-7f9c-",
            "namespace": "team-17",
            "labels": {"job-name": "train-7f9c", keys.POD_LABEL_QUOTA: "team-17"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train-7f9c",
                    "uid": "0b4c",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": managed_fields(containers),
        },
        "spec": {
            "containers": [container(index) for index in range(containers)],
            "volumes": [
                {"name": "config", "configMap": {"name": "worker", "defaultMode": 420}},
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


#: What mutate-pod writes into a new pod: its identity, a profile's node affinity, the gate
#: (the whole answer below has no profile: the identity and the gate).
MERGE = {
    "metadata": {"annotations": {keys.ANNO_USER_INFO: '{"user":"sue","groups":[]}'}},
    "spec": {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["gpu-a"]}]}]}}},
        "schedulingGates": [{"name": keys.ADMISSION_GATE}],
    },
}  # fmt: skip


def median_ms(run: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def kopf_patch(body: dict[str, Any]) -> object:
    return kopf.Patch(copy.deepcopy(MERGE), body=kopf.Body(cast(Any, body))).as_json_patch()


def answer_ms(body: dict[str, Any]) -> float:
    """The server's whole answer of mutate-pod to a CREATE of ``body``, median."""
    state = make_state(Settings())
    for index in range(QUOTAS):
        state.on_quota(
            {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
             "metadata": {"name": f"team-{index}", "namespace": f"team-{index}", "labels": {}},
             "spec": {"min": {"cpu": "10"}, "max": {"cpu": "20"}}}
        )  # fmt: skip
    state.mark_synced()
    state.gates_supported = True  # Kubernetes 1.27+: the admission gate is decided
    admission = register_webhooks(kopf.OperatorRegistry(), state, Settings())
    [mutate] = [handler for handler in admission.registered if handler.id == "mutate-pod"]
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "1", "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE", "object": body, "userInfo": {"username": "sue"}}}  # fmt: skip

    async def measure() -> float:
        await answer_review(mutate, review)  # the memory's first catch-up
        times = []
        for _ in range(RUNS):
            started = time.perf_counter()
            await answer_review(mutate, review)
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    return asyncio.run(measure())


def main() -> None:
    print("# the mutating answer's JSON patch: Kopf's (deep copy, whole-pod diff) vs the server's")
    for containers in CONTAINERS:
        body = pod(containers)
        kopf_ms = median_ms(functools.partial(kopf_patch, body))
        patch_ms = median_ms(functools.partial(json_patch, body, MERGE))
        size = len(json.dumps(body)) / 1024
        print(
            f"patch containers={containers} pod_kb={size:.1f} kopf_ms={kopf_ms:.3f} "
            f"patch_ms={patch_ms:.4f} ratio={kopf_ms / patch_ms:.0f} "
            f"answer_ms={answer_ms(body):.3f}"
        )


if __name__ == "__main__":
    main()
