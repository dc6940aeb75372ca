"""The admission rules on a quota's place in its tree, one rule at a time: the parent, cycles,
the keys and mins of parents and children, the tree id, and when ``is-parent`` may change. Each
rule is refused with the quota, the rule and the numbers in its message, and accepted at its
boundary."""

from __future__ import annotations

import pytest
from rule_objects import DEPT, TEAM_A, messages, pod, quota, rules, view, with_labels, with_spec

from elasticquota.core import keys
from elasticquota.core.decisions.mutation import quota_defaults
from elasticquota.core.model.models import PodInfo
from elasticquota.core.validation import (
    LABEL_ALLOW_FORCE_UPDATE,
    validate_quota_create,
    validate_quota_update,
)

# -- topology checks ------------------------------------------------------------------------------


def test_the_parent_must_exist() -> None:
    found = validate_quota_create(quota("q", parent="nowhere"), view())
    assert messages(found) == ["q has parentName nowhere but not find parentInfo in quotaInfoMap"]


@pytest.mark.parametrize(
    ("key", "value"),
    [(keys.LABEL_PARENT, "dépt"), (keys.LABEL_PARENT, "-dept"), (keys.LABEL_TREE_ID, "x" * 64)],
)
def test_a_name_label_that_is_not_a_label_value_is_refused_as_such(key: str, value: str) -> None:
    """Not "parent not exist": the quota, the label, its value and the rule (on create, on
    update, and in the create defaults, which the API server asks for first)."""
    expected = (
        f"quota q: label {key} has an invalid value {value!r}: a valid label value is at most 63 "
        "characters of ASCII letters, digits, '-', '_' and '.', beginning and ending with a "
        "letter or digit"
    )
    created = quota("q", labels={key: value})
    assert messages(validate_quota_create(created, view(DEPT))) == [expected]
    defaults = quota_defaults(created, view(DEPT))
    assert (messages(defaults.violations), defaults.labels) == ([expected], {})
    stored = quota("q")
    assert messages(validate_quota_update(stored, created, view(stored))) == [expected]


def test_the_parent_must_be_a_parent() -> None:
    leaf = quota("leaf")
    found = validate_quota_create(quota("q", parent="leaf"), view(leaf))
    assert messages(found) == ["q has parentName leaf but the parentQuotaInfo's IsParent is false"]
    assert validate_quota_create(quota("q", parent="dept", min={"cpu": "4"}), view(DEPT)) == []


def test_a_parent_chain_must_not_loop() -> None:
    top = quota("top", is_parent=True, min={"cpu": "10"})
    middle = quota("middle", parent="top", is_parent=True, min={"cpu": "5"})
    bottom = quota("bottom", parent="middle", is_parent=True, min={"cpu": "2"})
    moved = with_labels(top, parent="bottom")
    found = validate_quota_update(top, moved, view(top, middle, bottom))
    assert messages(found) == [
        "top has parentName bottom, which makes a cycle: top -> bottom -> middle -> top"
    ]
    itself = with_labels(middle, parent="middle")
    assert rules(validate_quota_update(middle, itself, view(top, middle, bottom))) == ["cycle"]


def test_max_keys_must_equal_the_parents() -> None:
    child = quota("q", parent="dept", min={"cpu": "1"}, max={"cpu": "4", "memory": "8Gi"})
    assert messages(validate_quota_create(child, view(DEPT))) == [
        "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey "
        "failed: dept's max keys are not the same with q's (dept: [cpu], q: [cpu memory])"
    ]


def test_max_keys_must_equal_the_childrens_when_the_parent_changes() -> None:
    wider = with_spec(DEPT, max={"cpu": "20", "memory": "64Gi"})
    assert messages(validate_quota_update(DEPT, wider, view(DEPT, TEAM_A))) == [
        "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey "
        "failed: team-a's max keys are not the same with dept's (dept: [cpu memory], "
        "team-a: [cpu])"
    ]


def test_min_keys_must_be_within_the_parents_min_keys() -> None:
    parent = quota("p", is_parent=True, min={"cpu": "4"}, max={"cpu": "8", "memory": "8Gi"})
    child = quota("c", parent="p", min={"memory": "1Gi"}, max={"cpu": "8", "memory": "8Gi"})
    assert messages(validate_quota_create(child, view(parent))) == [
        "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey "
        "failed: c's min keys are not all included in p's ([memory] missing from p's min)",
        # a key the parent has no min for counts as a min of 0 there
        "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: p (sum of its "
        "children's min with c: memory 1Gi; p's min: memory 0)",
    ]


def test_the_childrens_min_must_fit_in_the_parents_min() -> None:
    team_b = quota("team-b", parent="dept", min={"cpu": "5"}, max={"cpu": "20"})
    assert messages(validate_quota_create(team_b, view(DEPT, TEAM_A))) == [
        "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: dept (sum of its "
        "children's min with team-b: cpu 11; dept's min: cpu 10)"
    ]
    exact = with_spec(team_b, min={"cpu": "4"})
    assert validate_quota_create(exact, view(DEPT, TEAM_A)) == []


def test_the_min_sum_adds_the_quantities_as_written() -> None:
    """0.5m + 0.5m fits a parent min of 1m (in engine units each child is 1m: 2m > 1m); 0.6m +
    0.5m does not (1.1m, rounded up in the message)."""
    parent = quota("p", is_parent=True, min={"cpu": "1m"}, max={"cpu": "10"})
    first = quota("a", parent="p", min={"cpu": "0.5m"}, max={"cpu": "10"})
    second = quota("b", parent="p", min={"cpu": "0.5m"}, max={"cpu": "10"})
    assert validate_quota_create(second, view(parent, first)) == []
    rewritten = with_spec(parent, min={"cpu": "0.001"})  # the same 1m: the rules run again
    assert validate_quota_update(parent, rewritten, view(parent, first, second)) == []
    greedy = with_spec(second, min={"cpu": "0.6m"})
    assert messages(validate_quota_create(greedy, view(parent, first))) == [
        "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: p (sum of its "
        "children's min with b: cpu 2m; p's min: cpu 1m)"
    ]


def test_the_min_sum_writes_amounts_of_bytes_with_their_suffix() -> None:
    """Sums no one wrote: in Kubernetes quantities, bytes with the suffix that writes them exactly
    (ephemeral-storage's canonical form would be a count of bytes)."""
    disk = {"cpu": "10", "ephemeral-storage": "100Gi", "memory": "64Gi"}
    parent_min = {"ephemeral-storage": "20Gi", "memory": "25G"}
    parent = quota("p", is_parent=True, min=parent_min, max=disk)
    first = quota("a", parent="p", min={"ephemeral-storage": "15Gi", "memory": "20G"}, max=disk)
    second = quota("b", parent="p", min={"ephemeral-storage": "10Gi", "memory": "10G"}, max=disk)
    assert messages(validate_quota_create(second, view(parent, first))) == [
        "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: p (sum of its "
        "children's min with b: ephemeral-storage 25Gi, memory 30G; p's min: "
        "ephemeral-storage 20Gi, memory 25G)"
    ]


def test_a_parent_cannot_shrink_its_min_below_its_childrens() -> None:
    smaller = with_spec(DEPT, min={"cpu": "5"})
    assert messages(validate_quota_update(DEPT, smaller, view(DEPT, TEAM_A))) == [
        "checkMinQuotaSum all children's MinQuota > current MinQuota, current: dept (sum of its "
        "children's min: cpu 6; its min: cpu 5)"
    ]


def test_a_min_that_is_not_a_quantity_is_not_compared_with_the_childrens() -> None:
    """Refused for itself (rule quantity), it counts as 0: "its min: cpu 0" on the parent, and
    "dept's min: cpu 0" on a child, blamed it again."""
    broken = with_spec(DEPT, min={"cpu": "abc"})
    found = validate_quota_update(DEPT, broken, view(DEPT, TEAM_A))
    assert messages(found) == [
        "dept spec.min.cpu: quantity 'abc' is not a valid Kubernetes quantity"
    ]
    team_b = quota("team-b", parent="dept", min={"cpu": "1"}, max={"cpu": "20"})
    assert validate_quota_create(team_b, view(broken, TEAM_A)) == []


def test_the_min_sum_is_skipped_with_allow_force_update_or_is_root() -> None:
    greedy = quota("team-b", parent="dept", min={"cpu": "5"}, max={"cpu": "20"})
    forced = with_labels(greedy, allow_force_update="true")
    assert LABEL_ALLOW_FORCE_UPDATE in forced["metadata"]["labels"]
    assert validate_quota_create(forced, view(DEPT, TEAM_A)) == []
    rooted = with_labels(greedy, is_root="true")
    assert validate_quota_create(rooted, view(DEPT, TEAM_A)) == []


def test_top_level_quotas_are_never_compared_with_anything() -> None:
    huge = quota("huge", min={"cpu": "100000"}, max={"cpu": "100000"})
    assert validate_quota_create(huge, view(DEPT, TEAM_A)) == []


def test_the_tree_id_must_be_the_parents() -> None:
    parent = quota("p", is_parent=True, min={"cpu": "4"}, tree="t1")
    child = quota("c", parent="p", tree="t2")
    assert messages(validate_quota_create(child, view(parent))) == [
        "c tree id is different from parent p, [t2] vs [t1]"
    ]
    assert validate_quota_create(with_labels(child, tree_id="t1"), view(parent)) == []


def test_the_tree_id_cannot_change_and_must_match_the_childrens() -> None:
    parent = quota("p", is_parent=True, min={"cpu": "4"}, tree="t1")
    child = quota("c", parent="p", tree="t1")
    moved = with_labels(parent, tree_id="t2")
    assert messages(validate_quota_update(parent, moved, view(parent, child))) == [
        "p tree id changed [t1] vs [t2]",
        "p tree id is different from child c, [t2] vs [t1]",
    ]


def test_is_parent_cannot_turn_false_while_there_are_children() -> None:
    demoted = with_labels(DEPT, is_parent=None)
    assert messages(validate_quota_update(DEPT, demoted, view(DEPT, TEAM_A))) == [
        "quota has children, isParent is forbidden to modify as false, quotaName:dept "
        "(1 child quotas: team-a)"
    ]
    alone = quota("alone", is_parent=True)
    assert validate_quota_update(alone, with_labels(alone, is_parent=None), view(alone)) == []


@pytest.mark.parametrize(
    "bound",
    [
        pod("p1", namespace="elsewhere", quota_label="leaf"),  # labelled
        pod("p1", namespace="leaf"),  # in the namespace named like the quota
        pod("p1", namespace="ns-of-leaf"),  # in a namespace of its annotation
    ],
    ids=["label", "namespace", "annotation"],
)
def test_is_parent_cannot_turn_true_while_pods_are_bound(bound: PodInfo) -> None:
    leaf = quota("leaf", annotations={keys.ANNO_NAMESPACES: '["ns-of-leaf"]'})
    promoted = with_labels(leaf, is_parent="true")
    assert messages(validate_quota_update(leaf, promoted, view(leaf, pods=[bound]))) == [
        "quota has bound pods, isParent is forbidden to modify as true, quotaName: leaf "
        f"(1 pods: {bound.key})"
    ]
    unrelated = pod("p1", namespace="other")
    assert validate_quota_update(leaf, promoted, view(leaf, pods=[unrelated])) == []
