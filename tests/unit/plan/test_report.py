"""The ``plan -o json`` contract: shape, field names, quantity strings, trees, revocations in
eviction order, admission for pending pods only; and the example cluster's key numbers, worked out
by hand from the semantics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plan_document import PLAN_DOCUMENT_KEYS

from elasticquota.cli.output import API_VERSION
from elasticquota.core.quantities.quantity import parse_quantity
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import load_paths
from elasticquota.plan.report import plan_report

if TYPE_CHECKING:
    from conftest import K8s, Writer

PlanJson = Callable[..., Any]

QUOTA_FIELDS = {
    "namespace",
    "tree",
    "parent",
    "isParent",
    "min",
    "max",
    "effectiveMin",
    "sharedWeight",
    "request",
    "childRequest",
    "limitedRequest",
    "used",
    "runtime",
    "nonPreemptibleRequest",
    "nonPreemptibleUsed",
}
RL_FIELDS = QUOTA_FIELDS - {"namespace", "tree", "parent", "isParent"}


def fnv1a_64(text: str) -> int:
    """Independent FNV-1a 64 (the profile controller's tree id)."""
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


GPU_TREE = str(fnv1a_64("gpu/gpu-pool"))


@pytest.fixture
def example(plan_json: PlanJson, examples: Path) -> Any:
    return plan_json(examples)


# -- shape ------------------------------------------------------------------------------------


def test_the_document_is_versioned_and_has_exactly_its_eight_sections(example: Any) -> None:
    assert list(example) == list(PLAN_DOCUMENT_KEYS)


def test_every_quota_has_every_field_and_nothing_else(example: Any) -> None:
    assert example["quotas"]
    for name, entry in example["quotas"].items():
        assert set(entry) == QUOTA_FIELDS, name


def test_scalar_fields_have_their_types(example: Any) -> None:
    for entry in example["quotas"].values():
        assert isinstance(entry["namespace"], str)
        assert isinstance(entry["tree"], str)
        assert isinstance(entry["parent"], str)
        assert isinstance(entry["isParent"], bool)


def test_every_resource_list_maps_names_to_quantity_strings(example: Any) -> None:
    lists = [entry[field] for entry in example["quotas"].values() for field in RL_FIELDS]
    lists += [tree["total"] for tree in example["trees"].values()]
    for resources in lists:
        assert isinstance(resources, dict)
        assert list(resources) == sorted(resources)
        for value in resources.values():
            assert isinstance(value, str)
            parse_quantity(value)  # raises if not a quantity


def test_the_reserved_quotas_are_reported_too(example: Any) -> None:
    quotas = example["quotas"]
    for name in ("koordinator-root-quota", "koordinator-system-quota", "koordinator-default-quota"):
        assert name in quotas
    assert quotas["koordinator-default-quota"]["max"] == {
        "cpu": "1844674407370955161",
        "memory": "1844674407370955161",
    }


def test_trees_are_keyed_by_id_with_the_empty_string_for_the_default_tree(example: Any) -> None:
    assert set(example["trees"]) == {"", GPU_TREE}
    for name, entry in example["quotas"].items():
        assert entry["tree"] in example["trees"], name


def test_each_tree_names_the_profile_that_heads_it(example: Any) -> None:
    assert {tree: entry["profile"] for tree, entry in example["trees"].items()} == {
        "": "",
        GPU_TREE: "gpu-pool",
    }


def test_quotas_are_listed_by_name(example: Any) -> None:
    assert list(example["quotas"]) == sorted(example["quotas"])


def test_problems_name_the_object_and_the_message(
    plan_json: PlanJson, k8s: type[K8s], write: Writer
) -> None:
    path = write(k8s.quota("team", max={"cpu": "lots"}))
    problems = plan_json(path)["problems"]
    assert problems[0] == {
        "object": "ElasticQuota team/team",
        "kind": "ElasticQuota",
        "namespace": "team",
        "name": "team",
        "file": str(path),
        "document": 0,
        "line": 1,
        "rule": "operator",
        "source": "operator",
        "severity": "error",
        "message": "spec.max.cpu: quantity 'lots' is not a valid Kubernetes quantity",
    }
    assert all(set(problem) == set(problems[0]) for problem in problems)


# -- the example cluster, by hand --------------------------------------------------------------


def test_the_default_tree_total_is_the_general_nodes(example: Any) -> None:
    # All six nodes minus the GPU pool's total-resource (two GPU nodes).
    assert example["trees"][""]["total"] == {
        "cpu": "64",
        "memory": "256Gi",
        "nvidia.com/gpu": "0",
        "pods": "440",
    }


def test_the_gpu_tree_total_is_the_selected_nodes(example: Any) -> None:
    assert example["trees"][GPU_TREE]["total"] == {
        "cpu": "64",
        "memory": "256Gi",
        "nvidia.com/gpu": "16",
        "pods": "220",
    }


def test_the_profile_root_quota_gets_min_equal_to_its_pool(example: Any) -> None:
    root = example["quotas"]["gpu-root"]
    assert root["tree"] == GPU_TREE
    assert root["isParent"] is True
    assert root["min"] == {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "16"}
    assert root["request"] == {"cpu": "40", "memory": "160Gi", "nvidia.com/gpu": "12"}
    # It lends: its runtime is its request.
    assert root["runtime"] == root["request"]


def test_the_virtual_root_sums_the_whole_default_tree(example: Any) -> None:
    root = example["quotas"]["koordinator-root-quota"]
    assert root["request"]["cpu"] == "88"  # engineering 56 + analytics 32
    assert root["used"]["cpu"] == "60"


def test_analytics_and_engineering_share_the_pool_by_weight(example: Any) -> None:
    # T = 64 cpu; floors 16 + 40; pool 8 split 48:64 -> 3.4286 / 4.5714 (largest remainder).
    quotas = example["quotas"]
    assert quotas["analytics"]["runtime"]["cpu"] == "19429m"
    assert quotas["engineering"]["runtime"]["cpu"] == "44571m"
    assert quotas["analytics"]["sharedWeight"] == {"cpu": "48", "memory": "192Gi"}
    # Memory: analytics asks for its min only, engineering for less than its min: nobody borrows.
    assert quotas["analytics"]["runtime"]["memory"] == "64Gi"
    assert quotas["engineering"]["runtime"]["memory"] == "144Gi"


def test_ml_research_borrows_what_platform_leaves(example: Any) -> None:
    ml = example["quotas"]["ml-research"]
    assert ml["parent"] == "engineering"
    assert ml["request"] == {"cpu": "40", "memory": "80Gi"}
    assert ml["runtime"] == {"cpu": "28571m", "memory": "80Gi"}  # 44571m - platform's 16
    assert ml["used"] == {"cpu": "40", "memory": "80Gi"}


def test_a_quota_that_does_not_lend_requests_its_whole_min(example: Any) -> None:
    web = example["quotas"]["platform-web"]
    assert web["used"] == {"cpu": "4", "memory": "8Gi"}
    assert web["childRequest"] == {"cpu": "4", "memory": "8Gi"}
    assert web["request"] == {"cpu": "8", "memory": "32Gi"}
    assert web["nonPreemptibleUsed"] == {"cpu": "4", "memory": "8Gi"}


def test_ml_research_is_over_used_and_its_least_important_pods_go(example: Any) -> None:
    # used 40 > runtime 28.571: remove train-5 (prio 0) -> 32, train-4 (prio 50, later) -> 24;
    # neither fits back (24 + 8 > 28.571); victims most important first.
    revocations = {entry["quota"]: entry["pods"] for entry in example["revocations"]}
    assert revocations["ml-research"] == ["ml-research/train-4", "ml-research/train-5"]


def test_an_over_used_parent_has_no_own_pods_to_evict(example: Any) -> None:
    assert example["revocations"] == [
        {"quota": "engineering", "pods": []},
        {"quota": "ml-research", "pods": ["ml-research/train-4", "ml-research/train-5"]},
    ]


def test_admission_covers_exactly_the_pending_pods(example: Any) -> None:
    assert [entry["pod"] for entry in example["admission"]] == [
        "analytics/report-2",
        "analytics/report-3",
        "gpu/serve-llm",
    ]
    for entry in example["admission"]:
        assert set(entry) == {"pod", "quota", "admitted", "reason"}


def test_a_pending_analytics_pod_waits_for_cpu(example: Any) -> None:
    verdicts = {entry["pod"]: entry for entry in example["admission"]}
    assert verdicts["analytics/report-2"]["admitted"] is True  # 8 + 8 <= 19.429
    waiting = verdicts["analytics/report-3"]
    assert waiting["quota"] == "analytics"
    assert waiting["admitted"] is False
    assert waiting["reason"] == "quota analytics: cpu used 8 + request 16 > runtime 19429m"
    assert verdicts["gpu/serve-llm"] == {
        "pod": "gpu/serve-llm",
        "quota": "gpu-inference",
        "admitted": True,
        "reason": "fits in quota gpu-inference",
    }


def test_the_example_has_no_problems(example: Any) -> None:
    assert example["problems"] == []


# -- revocation order in the document ----------------------------------------------------------


def test_revocation_pods_are_in_eviction_order(
    plan_json: PlanJson, k8s: type[K8s], write: Writer
) -> None:
    # T = 10: owner keeps its min 8 for its pending pod, hog gets its min 2 but uses 6.
    # Least important first: h1 (1), h3 (3), h2 (5); removing h1 and h3 fits; neither fits back.
    path = write(
        k8s.node("n1", {"cpu": "10"}),
        k8s.quota("hog", {"cpu": "2"}, {"cpu": "10"}),
        k8s.quota("owner", {"cpu": "8"}, {"cpu": "10"}),
        k8s.pod("h1", "hog", {"cpu": "2"}, node="n1", priority=1),
        k8s.pod("h2", "hog", {"cpu": "2"}, node="n1", priority=5),
        k8s.pod("h3", "hog", {"cpu": "2"}, node="n1", priority=3),
        k8s.pod("wants", "owner", {"cpu": "8"}),
    )
    document = plan_json(path)
    assert document["quotas"]["hog"]["runtime"] == {"cpu": "2"}
    assert document["revocations"] == [{"quota": "hog", "pods": ["hog/h3", "hog/h1"]}]
    assert document["admission"] == [
        {"pod": "owner/wants", "quota": "owner", "admitted": True, "reason": "fits in quota owner"}
    ]


def test_plan_report_is_what_the_cli_prints(plan_json: PlanJson, examples: Path) -> None:
    printed = plan_json(examples)
    assert (printed.pop("apiVersion"), printed.pop("kind")) == (API_VERSION, "Plan")
    assert plan_report(compute_plan(load_paths([examples]))) == printed
