"""The quota webhook's rules for the ``user-limits`` annotation (``core.validation``): the same
problems ``plan`` reports, refused at CREATE and UPDATE with the quota, the limit and the rule."""

from __future__ import annotations

from typing import Any

from elasticquota.core import keys
from elasticquota.core.validation import (
    ClusterView,
    validate_quota_create,
    validate_quota_update,
)

Raw = dict[str, Any]


def quota(
    name: str, limits: str | None = None, parent: str | None = None, is_parent: bool = False
) -> Raw:
    labels = {keys.LABEL_PARENT: parent} if parent else {}
    if is_parent:
        labels[keys.LABEL_IS_PARENT] = "true"
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {
            "name": name,
            "namespace": "team",
            "labels": labels,
            "annotations": {keys.ANNO_USER_LIMITS: limits} if limits is not None else {},
        },
        "spec": {"min": {"cpu": "1"}, "max": {"cpu": "8"}},
    }


def messages(violations: list[Any]) -> list[str]:
    return [violation.message for violation in violations]


def rules(violations: list[Any]) -> list[str]:
    return [violation.rule for violation in violations if violation.rule.startswith("user-")]


def test_a_broken_annotation_is_refused_at_create_naming_quota_limit_and_rule() -> None:
    view = ClusterView([])
    (violation,) = validate_quota_create(
        quota("q", '- limit: "big"\n  users: [sue]\n  maxresources: {cpu: 9}'), view
    )
    assert violation.rule == "user-limits:exceeds-quota-max"
    assert violation.message == (
        'quota q: user limit #1 "big": maxresources exceed the quota\'s max: cpu 9 > 8'
    )  # the rule is the violation's own field: not said twice where both are shown
    assert validate_quota_create(quota("q", "- users: [sue]\n  maxapplications: 1"), view) == []
    assert rules(validate_quota_create(quota("q", "users: [sue"), view)) == ["user-limits:syntax"]


def test_an_annotation_only_update_is_checked_and_its_ancestors_limits_apply() -> None:
    parent = quota("parent", "- users: [sue]\n  maxapplications: 2", is_parent=True)
    old = quota("child", None, parent="parent")
    view = ClusterView([parent, old])
    new = quota("child", "- users: [sue]\n  maxapplications: 3", parent="parent")
    assert rules(validate_quota_update(old, new, view)) == [
        "user-limits:exceeds-ancestor-applications"
    ]
    fits = quota("child", "- users: [sue]\n  maxapplications: 2", parent="parent")
    assert validate_quota_update(old, fits, view) == []


def test_an_entry_without_maxapplications_under_an_ancestor_that_sets_it_is_told_to() -> None:
    """Unset is unlimited, above the parent's 2: the message says to set it, not "unlimited > 2"."""
    parent = quota("parent", "- users: [sue]\n  maxapplications: 2", is_parent=True)
    child = quota("child", "- users: [sue]\n  maxresources: {cpu: 1}", parent="parent")
    assert messages(validate_quota_create(child, ClusterView([parent]))) == [
        "quota child: user limit #1: user sue sets no maxapplications (unlimited); set one, at "
        "most 2, as the user limit of a parent or ancestor quota",
    ]


def test_lowering_a_parent_limit_below_a_childs_is_refused_on_the_child() -> None:
    parent = quota("parent", "- users: [sue]\n  maxresources: {cpu: 4}", is_parent=True)
    child = quota("child", "- users: [sue]\n  maxresources: {cpu: 3}", parent="parent")
    view = ClusterView([parent, child])
    lowered = quota("parent", "- users: [sue]\n  maxresources: {cpu: 2}", is_parent=True)
    (violation,) = validate_quota_update(parent, lowered, view)
    assert violation.rule == "user-limits:exceeds-ancestor-limit"
    assert violation.message.startswith(
        "quota child: user limit #1: user sue maxresources cpu 3 > 2"
    )


def test_limits_in_bytes_are_quoted_with_their_suffix_not_as_counts_of_bytes() -> None:
    """30G of memory is not 29296875Ki, 30Gi of ephemeral-storage not 32212254720."""
    in_bytes = "- users: [sue]\n  maxresources: {ephemeral-storage: 30Gi, memory: 26G}"
    small = quota("small", in_bytes)
    small["spec"] = {"max": {"ephemeral-storage": "20Gi", "memory": "16Gi"}}
    assert messages(validate_quota_create(small, ClusterView([]))) == [
        "quota small: user limit #1: maxresources exceed the quota's max: ephemeral-storage 30Gi "
        "> 20Gi, memory 26G > 16Gi",
    ]
    limits = "- users: [sue]\n  maxresources: {ephemeral-storage: 20Gi, memory: 25G}"
    parent = quota("parent", limits, is_parent=True)
    child = quota("child", in_bytes, parent="parent")
    for raw in (parent, child):
        raw["spec"] = {"max": {"ephemeral-storage": "100Gi", "memory": "64Gi"}}
    assert messages(validate_quota_create(child, ClusterView([parent]))) == [
        "quota child: user limit #1: user sue maxresources ephemeral-storage 30Gi > 20Gi, memory "
        "26G > 25G of the user limit of a parent or ancestor quota",
    ]


def test_a_problem_the_tree_already_had_does_not_refuse_an_unrelated_change() -> None:
    broken = quota("q", '- users: ["*", sue]\n  maxapplications: 1')  # written before the webhook
    view = ClusterView([broken])
    changed = quota("q", '- users: ["*", sue]\n  maxapplications: 1')
    changed["spec"]["max"] = {"cpu": "9"}
    assert validate_quota_update(broken, changed, view) == []
