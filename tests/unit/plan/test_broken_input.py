"""Bad input never crashes ``plan`` and never silently drops anything: each breakage yields a
problem naming the object and the rule, the exit code is 0, and the rest is still computed."""

from __future__ import annotations

import contextlib
import io
import json
import string
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from conftest import CliRunner, K8s, Writer


@pytest.fixture
def healthy(k8s: type[K8s]) -> list[dict[str, Any]]:
    """A node, a well-formed quota and its running pod: what must survive every breakage."""
    return [
        k8s.node("n1", {"cpu": "8", "memory": "32Gi"}),
        k8s.quota("healthy", {"cpu": "2"}, {"cpu": "8"}),
        k8s.pod("runner", "healthy", {"cpu": "1"}, node="n1"),
    ]


@pytest.fixture
def plan_with(
    run_cli: CliRunner, write: Writer, healthy: list[dict[str, Any]]
) -> Any:  # returns a function
    """``plan_with(*broken_documents)``: the JSON document; asserts exit 0 and that the healthy
    quota was still computed."""

    def run(*documents: Any, raw: str | None = None) -> Any:
        path = write(*healthy, *documents)
        if raw is not None:
            path.write_text(path.read_text() + "---\n" + raw)
        result = run_cli("plan", "-f", path, "-o", "json")
        assert result.code == 0, result.err
        document = result.json()
        quota = document["quotas"]["healthy"]
        assert (quota["request"], quota["used"]) == ({"cpu": "1"}, {"cpu": "1"})
        assert quota["runtime"]["cpu"] == "1"
        return document

    return run


#: Where a quota left out for its place in the tree leaves its pods (said in every such problem).
LEFT_OUT = (
    "the quota is left out of its tree and its pods count against koordinator-default-quota "
    "until it is fixed"
)


def problems_of(document: Any, obj: str) -> list[str]:
    """The operator's problems about ``obj`` (the webhooks' refusals and the schema's warnings
    are tested in test_webhook_rules and test_lint)."""
    return [
        p["message"]
        for p in document["problems"]
        if p["object"] == obj and p["source"] in ("operator", "input")
    ]


# -- quotas -----------------------------------------------------------------------------------


def test_an_invalid_quantity(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.quota("bad", {"cpu": "1"}, {"cpu": "lots"}))
    assert problems_of(document, "ElasticQuota bad/bad") == [
        "spec.max.cpu: quantity 'lots' is not a valid Kubernetes quantity",
        "the quota is left out of its tree",
    ]
    assert "bad" not in document["quotas"]


def test_a_missing_parent(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.quota("orphan", max={"cpu": "1"}, parent="ghost"))
    assert problems_of(document, "ElasticQuota orphan/orphan") == [
        f"orphaned: parent quota 'ghost' does not exist; {LEFT_OUT}"
    ]


def test_a_cycle(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(
        k8s.quota("left", max={"cpu": "1"}, parent="right", is_parent=True),
        k8s.quota("right", max={"cpu": "1"}, parent="left", is_parent=True),
        k8s.quota("below", max={"cpu": "1"}, parent="left"),
    )
    # Every member is left out, each naming the whole cycle.
    cycle = f"parent chain forms a cycle: left -> right -> left; {LEFT_OUT}"
    assert problems_of(document, "ElasticQuota left/left") == [cycle]
    assert problems_of(document, "ElasticQuota right/right") == [cycle]
    assert problems_of(document, "ElasticQuota below/below") == [
        f"orphaned: ancestor quota 'left' is left out; {LEFT_OUT}"
    ]


def test_a_parent_not_marked_is_parent(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.quota("child", max={"cpu": "1"}, parent="healthy"))
    assert problems_of(document, "ElasticQuota child/child") == [
        f"orphaned: parent quota 'healthy' is not marked {keys.LABEL_IS_PARENT}=true; {LEFT_OUT}"
    ]
    assert document["quotas"]["healthy"]["isParent"] is False


def test_a_quota_name_used_in_two_namespaces(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(
        k8s.quota("twin", max={"cpu": "2"}, namespace="first"),
        k8s.quota("twin", max={"cpu": "3"}, namespace="second"),
    )
    assert problems_of(document, "ElasticQuota second/twin") == [
        "quota name 'twin' is already used by ElasticQuota first/twin; quota names must be "
        "unique across namespaces; the quota is left out of its tree"
    ]
    assert document["quotas"]["twin"]["namespace"] == "first"
    assert document["quotas"]["twin"]["max"] == {"cpu": "2"}


def test_a_shared_quota_name_stays_with_the_recorded_owner(plan_with: Any, k8s: type[K8s]) -> None:
    """As the operator decides: the operator's name record first, before age and namespace."""
    first = k8s.quota("twin", max={"cpu": "2"}, namespace="first")
    first["metadata"].update(uid="1111", creationTimestamp="2026-01-01T00:00:00Z")
    owner = k8s.quota(
        "twin", max={"cpu": "3"}, namespace="second", annotations={keys.ANNO_NAME_OWNER: "2222"}
    )
    owner["metadata"].update(uid="2222", creationTimestamp="2026-02-01T00:00:00Z")
    document = plan_with(first, owner)
    assert document["quotas"]["twin"]["namespace"] == "second"
    assert problems_of(document, "ElasticQuota first/twin") == [
        "quota name 'twin' is already used by ElasticQuota second/twin; quota names must be "
        "unique across namespaces; the quota is left out of its tree"
    ]


def test_an_older_quota_with_a_broken_spec_keeps_its_name(plan_with: Any, k8s: type[K8s]) -> None:
    """As in the operator: left out for its spec, it still owns its name; the pods of the name
    count against the default quota, not against the newer quota."""
    broken = k8s.quota("twin", {"cpu": "5"}, {"cpu": "2"}, namespace="first")
    broken["metadata"].update(uid="1111", creationTimestamp="2026-01-01T00:00:00Z")
    newer = k8s.quota("twin", max={"cpu": "3"}, namespace="second")
    newer["metadata"].update(uid="2222", creationTimestamp="2026-02-01T00:00:00Z")
    document = plan_with(broken, newer)
    assert "twin" not in document["quotas"]
    assert problems_of(document, "ElasticQuota second/twin") == [
        "quota name 'twin' is already used by ElasticQuota first/twin; quota names must be "
        "unique across namespaces; the quota is left out of its tree"
    ]


def test_the_same_object_given_twice(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.quota("again", max={"cpu": "2"}), k8s.quota("again", max={"cpu": "3"}))
    assert problems_of(document, "ElasticQuota again/again") == [
        "the object appears more than once in the input; the last copy is used"
    ]
    assert document["quotas"]["again"]["max"] == {"cpu": "3"}


@pytest.mark.parametrize(
    ("key", "consequence"),
    [
        (keys.ANNO_SHARED_WEIGHT, "spec.max is used as the shared weight"),
        (keys.ANNO_NAMESPACES, "ignored"),
        (keys.ANNO_TOTAL_RESOURCE, "the tree's total is taken as empty"),
    ],
)
def test_malformed_json_in_an_annotation(
    plan_with: Any, k8s: type[K8s], key: str, consequence: str
) -> None:
    document = plan_with(k8s.quota("noted", max={"cpu": "2"}, annotations={key: '{"cpu": '}))
    (message,) = problems_of(document, "ElasticQuota noted/noted")
    assert message.startswith(f"annotation {key}: malformed JSON")
    assert message.endswith(consequence)
    # The quota itself is still computed.
    assert document["quotas"]["noted"]["max"] == {"cpu": "2"}
    if key == keys.ANNO_SHARED_WEIGHT:
        assert document["quotas"]["noted"]["sharedWeight"] == {"cpu": "2"}


def test_a_quota_whose_metadata_is_not_a_mapping(plan_with: Any) -> None:
    broken = {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": "not-a-mapping",
    }
    document = plan_with(broken)
    (problem,) = document["problems"]
    assert problem["object"] == "ElasticQuota /<unnamed>"
    assert problem["message"].startswith("invalid object: metadata")


# -- pods, nodes, documents -------------------------------------------------------------------


def test_a_pod_with_a_bad_quantity(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.pod("greedy", "healthy", {"cpu": "all-of-it"}))
    (message,) = problems_of(document, "Pod healthy/greedy")
    assert "container 'main' cpu" in message
    assert "'all-of-it' is not a valid Kubernetes quantity" in message
    assert message.endswith("the pod is not accounted")
    assert document["admission"] == []


def test_a_node_with_a_bad_quantity(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.node("n2", {"cpu": "a lot"}))
    assert problems_of(document, "Node /n2") == [
        "status.allocatable.cpu: quantity 'a lot' is not a valid Kubernetes quantity",
        "the node is not counted",
    ]
    assert document["trees"][""]["total"]["cpu"] == "8"


@pytest.mark.parametrize(
    "raw", ["- just\n- a list\n", "a plain string\n", "42\n"], ids=["list", "string", "number"]
)
def test_an_object_that_is_not_a_mapping(plan_with: Any, raw: str) -> None:
    document = plan_with(raw=raw)
    (problem,) = document["problems"]
    assert problem["object"].startswith("document in ")
    assert problem["object"].endswith("manifests.yaml")
    assert problem["message"] == "not a Kubernetes object (no kind); skipped"


def test_a_yaml_document_with_no_kind(plan_with: Any) -> None:
    document = plan_with(raw="apiVersion: v1\nmetadata: {name: nameless}\n")
    (problem,) = document["problems"]
    assert problem["message"] == "not a Kubernetes object (no kind); skipped"


def test_a_list_whose_items_are_not_a_list(plan_with: Any) -> None:
    document = plan_with({"apiVersion": "v1", "kind": "List", "items": 5})
    assert [p["message"] for p in document["problems"]] == [
        "not a Kubernetes object (no kind); skipped"
    ]


def test_a_huge_quantity_is_capped_not_a_hang(plan_with: Any, k8s: type[K8s]) -> None:
    document = plan_with(k8s.quota("vast", max={"cpu": "1e999999999", "memory": "9" * 900}))
    assert document["quotas"]["vast"]["max"] == {
        "cpu": "9223372036854775807",
        "memory": "9223372036854775807",
    }


def test_a_profile_without_a_node_selector(plan_with: Any, k8s: type[K8s]) -> None:
    profile = k8s.profile("pool", "gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    del profile["spec"]["nodeSelector"]
    document = plan_with(profile)
    (message,) = problems_of(document, "ElasticQuotaProfile gpu/pool")
    assert message.startswith("invalid object: spec.nodeSelector")


# -- fuzzing ----------------------------------------------------------------------------------

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
    assert code == 0, err.getvalue()
    json.loads(out.getvalue())


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


def test_a_priority_class_without_a_name_is_a_problem_not_dropped(plan_with: Any) -> None:
    document = plan_with(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5}
    )
    assert problems_of(document, "PriorityClass /<unnamed>") == ["no metadata.name; ignored"]
