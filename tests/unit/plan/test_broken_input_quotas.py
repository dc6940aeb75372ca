"""Broken quotas never crash ``plan`` and are never silently dropped: an invalid quantity, a
missing parent, a cycle, a parent not marked as one, a quota name used twice, a duplicate object,
malformed JSON in an annotation or metadata that is not a mapping each yield a problem naming the
quota and the rule, the exit code is 0, and the rest is still computed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from plan_problems import problems_of

from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import K8s


#: Where a quota left out for its place in the tree leaves its pods (said in every such problem).
LEFT_OUT = (
    "the quota is left out of its tree and its pods count against koordinator-default-quota "
    "until it is fixed"
)


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
    assert problem["message"] == "metadata is not a mapping; skipped: plan reads objects by name"
    assert (problem["rule"], problem["document"]) == ("no-name", 3)  # after the healthy three
