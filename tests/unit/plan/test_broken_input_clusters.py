"""Random but well-formed clusters give a consistent ``plan``: every pending pod has its admission
decision, in the quota it belongs to, and every revocation names an over-used quota and only its
assigned, preemptible pods."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.core import keys
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests
from elasticquota.plan.report import plan_report
from elasticquota.plan.table import render_plan

QUOTA_NAMES = ["a", "b", "c", "d"]


@st.composite
def clusters(draw: st.DrawFn) -> Manifests:
    """Well-formed but random clusters: enough valid objects to reach admission and revocation."""
    small = st.integers(min_value=0, max_value=8)
    quotas = []
    for name in draw(st.lists(st.sampled_from(QUOTA_NAMES), unique=True, max_size=4)):
        minimum = {"cpu": draw(small), "memory": draw(small)}
        maximum = {key: value + draw(small) for key, value in minimum.items()}
        labels = {
            keys.LABEL_PARENT: draw(st.sampled_from(["", "", "", *QUOTA_NAMES])),
            keys.LABEL_IS_PARENT: draw(st.sampled_from(["true", "false"])),
            keys.LABEL_ALLOW_LENT: draw(st.sampled_from(["true", "false"])),
        }
        quotas.append(
            {
                "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                "kind": "ElasticQuota",
                "metadata": {"name": name, "namespace": name, "labels": labels},
                "spec": {
                    "min": {k: f"{v}" if k == "cpu" else f"{v}Gi" for k, v in minimum.items()},
                    "max": {k: f"{v}" if k == "cpu" else f"{v}Gi" for k, v in maximum.items()},
                },
            }
        )
    pods = []
    for index in range(draw(st.integers(min_value=0, max_value=8))):
        labels = {keys.POD_LABEL_PREEMPTIBLE: draw(st.sampled_from(["true", "false"]))}
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{index}",
                    "namespace": draw(st.sampled_from([*QUOTA_NAMES, "elsewhere"])),
                    "labels": labels,
                },
                "spec": {
                    "nodeName": draw(st.sampled_from(["", "n1"])),
                    "priority": draw(st.integers(min_value=0, max_value=3)),
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {
                                    "cpu": f"{draw(small)}",
                                    "memory": f"{draw(small)}Gi",
                                }
                            },
                        }
                    ],
                },
                "status": {"phase": draw(st.sampled_from(["Running", "Running", "Succeeded"]))},
            }
        )
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": f"{draw(small) * 2}", "memory": f"{draw(small)}Gi"}},
    }
    return Manifests(quotas=quotas, pods=pods, nodes=[node])


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests=clusters())
def test_random_valid_clusters_give_consistent_admission_and_revocation(
    manifests: Manifests,
) -> None:
    plan = compute_plan(manifests)
    document = plan_report(plan)
    render_plan(plan)
    snapshot = plan.snapshot
    for entry in document["admission"]:
        pod = snapshot.pods[entry["pod"]]
        assert not pod.is_assigned and pod.counts_in_request
        assert entry["quota"] == snapshot.pod_quota[entry["pod"]]
        assert entry["admitted"] == (
            entry["reason"].startswith("fits in quota") or "reserved" in entry["reason"]
        )
    pending = {
        key for key, pod in snapshot.pods.items() if not pod.is_assigned and not pod.is_terminal
    }
    assert {entry["pod"] for entry in document["admission"]} == pending
    for entry in document["revocations"]:
        runtime, used = (
            snapshot.quotas[entry["quota"]].runtime,
            snapshot.quotas[entry["quota"]].used,
        )
        assert any(key in runtime and value > runtime[key] for key, value in used.items())
        for key in entry["pods"]:
            pod = snapshot.pods[key]
            assert snapshot.pod_quota[key] == entry["quota"]
            assert pod.is_assigned and pod.preemptible
