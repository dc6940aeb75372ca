"""The admission rules on names and namespaces, one rule at a time: a quota name is unique across
namespaces (of quotas sharing one, the rules judge against its owner) and a namespace belongs to
one quota, each refused with the quota and the name in its message; and the catalog of quotas the
rules read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rule_objects import (
    DEPT,
    TEAM_A,
    Raw,
    messages,
    pod,
    quota,
    rules,
    view,
    with_labels,
    with_spec,
)

from elasticquota.core import keys
from elasticquota.core.validation import (
    ClusterView,
    QuotaCatalog,
    validate_quota_create,
    validate_quota_delete,
    validate_quota_update,
)
from elasticquota.core.validation.facts import NANOS, exact_amounts

# -- names and namespaces -------------------------------------------------------------------------


def test_quota_names_are_unique_across_namespaces() -> None:
    found = validate_quota_create(quota("dept", namespace="other"), view(DEPT))
    assert messages(found) == [
        "AddQuota quota already exist:dept (quota dept in namespace other: a quota dept already "
        "exists in namespace team; quota names are unique across namespaces)"
    ]


def owned(raw: Raw, uid: str, created: str, record: bool = False) -> Raw:
    """``raw`` as stored: with a uid, a creation time and maybe the operator's name record."""
    copy = json.loads(json.dumps(raw))
    copy["metadata"].update(uid=uid, creationTimestamp=created)
    if record:
        copy["metadata"]["annotations"][keys.ANNO_NAME_OWNER] = uid
    return copy


SECOND = "2026-11-25T10:00:00Z"
BASE_DEPT = owned(quota("dept", "base", is_parent=True), "f-owner", SECOND)
BAD_DEPT = owned(quota("dept", "bad", is_parent=True), "0-newcomer", SECOND)
CHILD = quota("team-a", parent="dept", min={"cpu": "1"})


@pytest.mark.parametrize(
    ("stored", "owner_of", "owner"),
    [
        ((BASE_DEPT, BAD_DEPT), None, "bad"),  # a tie without a record: the lower uid
        ((owned(BASE_DEPT, "f-owner", SECOND, record=True), BAD_DEPT), None, "base"),
        ((owned(BASE_DEPT, "f", "2026-01-01T00:00:00Z"), BAD_DEPT), None, "base"),  # older
        ((BASE_DEPT, BAD_DEPT), lambda name: "base", "base"),  # as the engine decided
    ],
    ids=["uid", "record", "older", "engine"],
)
def test_of_quotas_sharing_a_name_the_rules_judge_against_its_owner(
    stored: tuple[Raw, ...], owner_of: Any, owner: str
) -> None:
    found = ClusterView(stored, owner_of=owner_of).quota("dept")
    assert found is not None and found.namespace == owner


def test_a_quota_left_out_for_sharing_a_name_can_be_deleted_and_demoted() -> None:
    """The children and the pods of the name are the owner's: the newcomer never holds them."""
    cluster = ClusterView(
        (BASE_DEPT, BAD_DEPT, CHILD), [pod("p", quota_label="dept")], lambda name: "base"
    )
    assert validate_quota_delete(BAD_DEPT, cluster) == []
    assert validate_quota_update(BAD_DEPT, with_labels(BAD_DEPT, is_parent=None), cluster) == []
    assert rules(validate_quota_delete(BASE_DEPT, cluster)) == ["delete-children", "delete-pods"]
    demoted = with_labels(BASE_DEPT, is_parent=None)
    assert rules(validate_quota_update(BASE_DEPT, demoted, cluster)) == ["is-parent-change"]


def test_a_quota_left_out_for_sharing_a_name_is_not_judged_against_the_owners_children() -> None:
    """Its tree id, max keys and min are compared with no child: the children of the name are the
    owner's (the owner still is)."""
    cluster = ClusterView((BASE_DEPT, BAD_DEPT, CHILD), owner_of=lambda name: "base")
    wider = with_spec(BAD_DEPT, max={"cpu": "20", "memory": "1Gi"})
    assert validate_quota_update(BAD_DEPT, wider, cluster) == []
    owner = with_spec(BASE_DEPT, **wider["spec"])
    assert rules(validate_quota_update(BASE_DEPT, owner, cluster)) == [
        "max-keys",
        "min-keys",
        "min-sum",
    ]


def test_a_namespace_belongs_to_one_quota_only() -> None:
    owner = quota("a", annotations={keys.ANNO_NAMESPACES: '["ns1","ns2"]'})
    claim = quota("b", annotations={keys.ANNO_NAMESPACES: '["ns2"]'})
    assert messages(validate_quota_create(claim, view(owner))) == [
        "AddQuota quota b's annotation namespace ns2 is already bound to quota a"
    ]
    existing = quota("b")
    assert messages(validate_quota_update(existing, claim, view(owner, existing))) == [
        "UpdateQuota, quota b update namespaces, but namespace ns2 is already bound to quota a"
    ]
    free = quota("b", annotations={keys.ANNO_NAMESPACES: '["ns3"]'})
    assert validate_quota_create(free, view(owner)) == []


def test_a_malformed_namespaces_annotation_is_refused() -> None:
    found = validate_quota_create(quota("b", annotations={keys.ANNO_NAMESPACES: "ns1"}), view())
    assert messages(found) == [
        f"b annotation {keys.ANNO_NAMESPACES}: expected a JSON list of namespace names, got 'ns1'"
    ]


# -- the catalog the rules read -------------------------------------------------------------------


def test_the_catalog_follows_changes_one_object_at_a_time() -> None:
    catalog = QuotaCatalog([DEPT, TEAM_A, quota("other", is_parent=True)])
    assert catalog.children("dept") == ["team-a"]
    catalog.upsert(with_labels(TEAM_A, parent="other"))
    assert (catalog.children("dept"), catalog.children("other")) == ([], ["team-a"])
    listed = quota("lister", annotations={keys.ANNO_NAMESPACES: '["ns1"]'})
    catalog.upsert(listed)
    assert catalog.namespace_owner("ns1") == "lister"
    catalog.remove(("team", "lister"))
    assert catalog.namespace_owner("ns1") is None
    assert len(catalog) == 3
    cluster = ClusterView(catalog)
    changed = with_spec(DEPT, min={"cpu": "1"})
    assert cluster.quota("dept") is not None and cluster.quota("dept").min == {"cpu": 10000}
    catalog.upsert(changed)
    assert cluster.quota("dept").min == {"cpu": 1000}  # parsed again after the change


def test_of_quotas_sharing_a_name_the_first_namespace_is_the_quota() -> None:
    catalog = QuotaCatalog([quota("q", namespace="b"), quota("q", namespace="a")])
    assert ClusterView(catalog).quota("q").namespace == "a"
    catalog.remove(("a", "q"))
    assert ClusterView(catalog).quota("q").namespace == "b"


def test_the_sum_of_the_siblings_mins_is_exact_whoever_is_left_out() -> None:
    """``ClusterView.children_min``, remembered per parent, equals the sum over the other
    children's mins: the same exact values (nano units), and only keys one of the others has."""
    children = [
        quota("a", min={"cpu": "1", "nvidia.com/gpu": "2"}, parent="dept"),
        quota("b", min={"cpu": "2"}, parent="dept"),
        quota("c", min={"cpu": "0", "memory": "1Gi"}, parent="dept"),
    ]
    view = ClusterView([quota("dept", is_parent=True), *children])

    def naive(but: str) -> dict[str, int]:
        total: dict[str, int] = {}
        for name in view.children("dept"):
            facts = view.quota(name)
            if name != but and facts is not None:
                for key, value in exact_amounts(facts, "min").items():
                    total[key] = total.get(key, 0) + value
        return total

    for but in ("a", "b", "c", "", "stranger"):
        assert view.children_min("dept", but) == naive(but)
    assert "nvidia.com/gpu" not in view.children_min("dept", "a")
    assert view.children_min("dept", "c")["cpu"] == 3 * NANOS
