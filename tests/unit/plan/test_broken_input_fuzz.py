"""Random objects and documents never crash ``plan``: hypothesis draws quotas, pods, nodes and
profiles mostly shaped like them, sometimes garbage anywhere (bad quantities, labels, annotations,
metadata, whole objects), and ``plan`` computes, reports and renders them without an exception;
the CLI reads any YAML documents of them and exits 0 with a JSON document."""

from __future__ import annotations

import contextlib
import io
import json
import string
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.cli import main
from elasticquota.core import keys
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests
from elasticquota.plan.report import plan_report
from elasticquota.plan.table import render_plan

LABEL_KEYS = [
    keys.LABEL_PARENT,
    f"{keys.PREFIX}/parent-quota-name",
    keys.LABEL_IS_PARENT,
    keys.LABEL_ALLOW_LENT,
    keys.LABEL_TREE_ID,
    keys.LABEL_IS_ROOT,
    keys.LABEL_IGNORE_DEFAULT_TREE,
    keys.POD_LABEL_QUOTA,
    keys.POD_LABEL_PREEMPTIBLE,
    "pool",
]
ANNOTATION_KEYS = [
    keys.ANNO_SHARED_WEIGHT,
    keys.ANNO_NAMESPACES,
    keys.ANNO_TOTAL_RESOURCE,
    keys.ANNO_LENDING_LIMIT,
    keys.ANNO_BORROWING_LIMIT,
    keys.ANNO_RESOURCE_KEYS,
]
NAMES = ["a", "b", "c", "team", "gpu", keys.ROOT_QUOTA, keys.SYSTEM_QUOTA, keys.DEFAULT_QUOTA, ""]
RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "pods"]


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` three times out of four, ``bad`` otherwise."""
    return st.one_of(good, good, good, bad)


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
garbage = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
quantities = mostly(
    st.sampled_from(["1", "2", "4", "500m", "8", "16", "2Gi", "0", "1e3", "0.1m", "1Ki"]),
    st.one_of(
        st.from_regex(
            r"\A[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]{1,4})?\Z"
        ),
        st.sampled_from(["-1", "", "x", "1e999999999", "9" * 30]),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        garbage,
    ),
)
resource_lists = st.dictionaries(st.sampled_from(RESOURCES), quantities, max_size=4)
label_values = mostly(
    st.sampled_from(["true", "false", "", *NAMES]),
    st.one_of(st.text(string.printable, max_size=8), garbage),
)
annotation_values = st.one_of(
    st.sampled_from(['{"cpu":"1"}', '{"cpu":2,"memory":"1Gi"}', '["a","b"]', "[", "{", "null"]),
    resource_lists.map(json.dumps),
    st.lists(st.sampled_from(NAMES), max_size=3).map(json.dumps),
    st.text(max_size=10),
    garbage,
)
metadata = mostly(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(NAMES),
            "namespace": st.sampled_from(NAMES),
            "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), label_values, max_size=4),
            "annotations": st.dictionaries(
                st.sampled_from(ANNOTATION_KEYS), annotation_values, max_size=3
            ),
        },
        optional={"creationTimestamp": st.text(max_size=5), "deletionTimestamp": label_values},
    ),
    garbage,
)
containers = st.lists(
    mostly(
        st.fixed_dictionaries(
            {
                "resources": st.fixed_dictionaries(
                    {}, optional={"requests": resource_lists, "limits": resource_lists}
                )
            },
            optional={
                "name": st.text(max_size=3),
                "restartPolicy": st.sampled_from(["Always", "x"]),
            },
        ),
        garbage,
    ),
    max_size=3,
)


def objects(
    kind: str, api_version: str, spec: st.SearchStrategy[Any], status: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Objects of one kind, mostly shaped like it, sometimes any dict."""
    return mostly(
        st.fixed_dictionaries(
            {"apiVersion": st.just(api_version), "kind": st.just(kind), "metadata": metadata},
            optional={"spec": spec, "status": status},
        ),
        st.dictionaries(st.text(max_size=5), garbage, max_size=3),
    )


quota_objects = objects(
    "ElasticQuota",
    "scheduling.sigs.k8s.io/v1alpha1",
    mostly(
        st.fixed_dictionaries({}, optional={"min": resource_lists, "max": resource_lists}), garbage
    ),
    garbage,
)
pod_objects = objects(
    "Pod",
    "v1",
    mostly(
        st.fixed_dictionaries(
            {"containers": containers},
            optional={
                "initContainers": containers,
                "overhead": resource_lists,
                "nodeName": st.sampled_from(["", "n1", "n2"]),
                "priority": mostly(st.integers(-5, 5), garbage),
            },
        ),
        garbage,
    ),
    mostly(
        st.fixed_dictionaries(
            {},
            optional={
                "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Odd"]),
                "startTime": st.sampled_from(["2026-11-20T08:00:00Z", "soon", ""]),
            },
        ),
        garbage,
    ),
)
node_objects = objects(
    "Node",
    "v1",
    mostly(st.fixed_dictionaries({}, optional={"unschedulable": st.booleans()}), garbage),
    mostly(
        st.fixed_dictionaries(
            {}, optional={"allocatable": resource_lists, "capacity": resource_lists}
        ),
        garbage,
    ),
)
profile_objects = objects(
    "ElasticQuotaProfile",
    "quota.koordinator.sh/v1alpha1",
    mostly(
        st.fixed_dictionaries(
            {
                "quotaName": st.sampled_from(NAMES),
                "nodeSelector": mostly(
                    st.fixed_dictionaries(
                        {"matchLabels": st.dictionaries(st.sampled_from(["pool"]), label_values)}
                    ),
                    garbage,
                ),
            },
            optional={
                "quotaLabels": st.dictionaries(st.sampled_from(LABEL_KEYS), label_values),
                "resourceRatio": mostly(st.sampled_from(["0.5", "2", "x"]), garbage),
            },
        ),
        garbage,
    ),
    garbage,
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    quotas=st.lists(quota_objects, max_size=5),
    pods=st.lists(pod_objects, max_size=4),
    nodes=st.lists(node_objects, max_size=2),
    profiles=st.lists(profile_objects, max_size=2),
)
def test_random_objects_never_crash_plan(
    quotas: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    profiles: list[dict[str, Any]],
) -> None:
    manifests = Manifests(quotas=quotas, pods=pods, nodes=nodes, profiles=profiles)
    plan = compute_plan(manifests)
    document = plan_report(plan)
    json.dumps(document)
    render_plan(plan)
    for quota in document["quotas"].values():
        for field in ("min", "max", "request", "used", "runtime"):
            assert all(isinstance(value, str) for value in quota[field].values())


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents=st.lists(st.one_of(quota_objects, pod_objects, node_objects, garbage), max_size=6))
def test_random_documents_never_crash_the_cli(
    tmp_path_factory: pytest.TempPathFactory, documents: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.yaml"
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", "-f", str(path), "-o", "json"])
    if all(document is None for document in documents):  # a file of no object: kubectl's error
        assert (code, err.getvalue()) == (2, f"error: no objects in {path}\n")
        return
    assert code == 0, err.getvalue()
    json.loads(out.getvalue())
