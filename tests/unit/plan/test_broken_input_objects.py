"""Broken pods, nodes, profiles, priority classes and YAML documents never crash ``plan`` and are
never silently dropped: each breakage yields a problem naming the object (or the document) and the
rule, the exit code is 0, and the rest is still computed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from plan_problems import problems_of

if TYPE_CHECKING:
    from conftest import K8s


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


@pytest.mark.parametrize("reserved", ["koordinator-root-quota", "koordinator-default-quota"])
def test_a_profile_naming_a_reserved_quota_is_ignored(
    plan_with: Any, k8s: type[K8s], reserved: str
) -> None:
    """It would turn the default tree's root, or the quota of pods without one, into a profile
    tree's root; the engine ignores the labels of a reserved quota, so nothing said so."""
    namespace = "koordinator-system"
    profile = k8s.profile("pool", namespace, quota_name=reserved, match_labels={"pool": "gpu"})
    document = plan_with(profile)
    assert problems_of(document, f"ElasticQuotaProfile {namespace}/pool") == [
        f"quota {reserved!r} is reserved; this profile is ignored"
    ]
    assert document["quotas"][reserved]["max"] == (
        {}
        if reserved == "koordinator-root-quota"
        else {"cpu": "1844674407370955161", "memory": "1844674407370955161"}
    )


def test_a_priority_class_without_a_name_is_a_problem_not_dropped(plan_with: Any) -> None:
    document = plan_with(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5}
    )
    assert problems_of(document, "PriorityClass /<unnamed>") == [
        "no metadata; skipped: plan reads objects by name"
    ]
