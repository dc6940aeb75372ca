"""The admission rules and the create defaults, one rule at a time.

Each rule is shown refused, with the quota, the rule and the numbers in the message, and accepted
at its boundary. Objects are raw dicts as the API server sends them; the cluster is a
``ClusterView`` of raw quotas and ``PodInfo`` pods.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from quota_bodies import quota_body

from elasticquota.core import keys
from elasticquota.core.decisions.mutation import quota_defaults
from elasticquota.core.model.models import PodInfo
from elasticquota.core.validation import (
    ANNO_MAX_STRICT_CHECK_KEYS,
    LABEL_ALLOW_FORCE_UPDATE,
    ClusterView,
    QuotaCatalog,
    Violation,
    pod_quota,
    quota_unchanged,
    validate_pod,
    validate_quota_create,
    validate_quota_delete,
    validate_quota_update,
)

Raw = dict[str, Any]


def quota(
    name: str,
    namespace: str = "team",
    *,
    max: Mapping[str, Any] | None = None,
    used: Mapping[str, str] | None = None,
    **shape: Any,
) -> Raw:
    """An ElasticQuota without a uid (max 10 cpu unless given; ``shape``: ``quota_body``'s
    options)."""
    status = None if used is None else {"used": dict(used)}
    return quota_body(name, namespace, max=max or {"cpu": "10"}, uid=None, status=status, **shape)


def pod_body(name: str, namespace: str = "team", labels: Mapping[str, str] | None = None) -> Raw:
    return {"metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})}}


def pod(name: str, namespace: str = "team", quota_label: str = "") -> PodInfo:
    return PodInfo(namespace=namespace, name=name, requests={"cpu": 1000}, quota_label=quota_label)


def view(*quotas: Raw, pods: Iterable[PodInfo] = ()) -> ClusterView:
    return ClusterView(quotas, pods)


def messages(found: list[Violation]) -> list[str]:
    return [violation.message for violation in found]


def rules(found: list[Violation]) -> list[str]:
    return [violation.rule for violation in found]


def with_labels(raw: Raw, **changes: str | None) -> Raw:
    """A copy of ``raw`` with labels set (or removed with None); keys are label suffixes."""
    copy = json.loads(json.dumps(raw))
    labels = copy["metadata"]["labels"]
    for suffix, value in changes.items():
        key = f"{keys.PREFIX}/{suffix.replace('_', '-')}"
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    return copy


def with_spec(raw: Raw, **spec: Mapping[str, Any]) -> Raw:
    copy = json.loads(json.dumps(raw))
    copy["spec"].update({key: dict(value) for key, value in spec.items()})
    return copy


# A parent with 10 cpu of min, and one child taking 6 of it.
DEPT = quota("dept", min={"cpu": "10"}, max={"cpu": "20"}, is_parent=True)
TEAM_A = quota("team-a", min={"cpu": "6"}, max={"cpu": "20"}, parent="dept")


# -- self-item checks -----------------------------------------------------------------------------


def test_negative_max_is_refused_with_the_dimensions_and_values() -> None:
    found = validate_quota_create(quota("q", max={"cpu": "-1", "memory": "1Gi"}), view())
    assert messages(found) == ["q quota.Spec.Max's value < 0, in dimensions :[cpu] (cpu=-1)"]
    assert validate_quota_create(quota("q", max={"cpu": "0"}), view()) == []


def test_negative_min_is_refused() -> None:
    found = validate_quota_create(quota("q", min={"cpu": "-500m"}, max={"cpu": "1"}), view())
    assert messages(found) == ["q quota.Spec.Min's value < 0, in dimensions :[cpu] (cpu=-500m)"]


def test_an_invalid_quantity_is_refused_naming_the_field() -> None:
    found = validate_quota_create(quota("q", max={"cpu": "lots"}), view())
    assert rules(found) == ["quantity"]
    assert found[0].message.startswith("q spec.max.cpu: ")
    assert "'lots' is not a valid Kubernetes quantity" in found[0].message


def test_min_must_not_exceed_max_and_the_message_has_both_numbers() -> None:
    found = validate_quota_create(quota("q", min={"cpu": "5"}, max={"cpu": "4"}), view())
    assert messages(found) == ["resourceKey cpu of quota q min 5 > max 4"]
    assert validate_quota_create(quota("q", min={"cpu": "4"}, max={"cpu": "4"}), view()) == []


def test_min_keys_must_be_within_max_keys() -> None:
    found = validate_quota_create(
        quota("q", min={"cpu": "1", "nvidia.com/gpu": "1"}, max={"cpu": "4"}), view()
    )
    assert messages(found) == [
        "resourceKey nvidia.com/gpu of quota q is included in min, which is not included in max"
    ]


def test_shared_weight_must_parse_and_be_non_negative() -> None:
    negative = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"-2"}'})
    assert messages(validate_quota_create(negative, view())) == [
        f"q quota.Annotation[{keys.ANNO_SHARED_WEIGHT}]'s value < 0, in dimension :[cpu] (cpu -2)"
    ]
    broken = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: "{cpu"})
    found = validate_quota_create(broken, view())
    assert rules(found) == ["shared-weight"]
    assert "malformed JSON" in found[0].message
    fine = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"3"}'})
    assert validate_quota_create(fine, view()) == []


def test_a_shared_weight_copied_from_a_refused_max_is_not_blamed_too() -> None:
    """The mutating webhook copies max into a missing shared weight: a max of -1 (or one that is
    not a quantity) is refused by the max's rule alone, not by shared-weight as well."""
    mutated = quota("q", max={"cpu": "-1", "memory": "1Gi"})
    mutated["metadata"]["annotations"] = quota_defaults(mutated, view()).annotations
    assert mutated["metadata"]["annotations"] == {
        keys.ANNO_SHARED_WEIGHT: '{"cpu":"-1","memory":"1Gi"}'
    }
    found = validate_quota_create(mutated, view())
    assert rules(found) == ["negative-max"]
    assert messages(found) == ["q quota.Spec.Max's value < 0, in dimensions :[cpu] (cpu=-1)"]
    lots = quota("q", max={"cpu": "lots"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"lots"}'})
    assert rules(validate_quota_create(lots, view())) == ["quantity"]


def test_a_shared_weight_of_its_own_is_still_checked_beside_a_refused_max() -> None:
    own = quota("q", max={"cpu": "-1"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"-2"}'})
    assert rules(validate_quota_create(own, view())) == ["negative-max", "shared-weight"]


def test_max_strict_check_keys_keep_max_at_or_above_used() -> None:
    strict = {ANNO_MAX_STRICT_CHECK_KEYS: '["cpu","memory"]'}
    below = quota("q", max={"cpu": "2", "memory": "1Gi"}, annotations=strict, used={"cpu": "3"})
    assert messages(validate_quota_create(below, view())) == [
        "resourceKey cpu of quota q max 2 < used 3"
    ]
    missing = quota("q", max={"memory": "1Gi"}, annotations=strict, used={"cpu": "1"})
    assert messages(validate_quota_create(missing, view())) == [
        "resourceKey cpu of quota q is included in used, which is not included in max but should "
        "check max >= used"
    ]
    # keys never used are skipped; max == used is fine
    fine = quota("q", max={"cpu": "3"}, annotations=strict, used={"cpu": "3"})
    assert validate_quota_create(fine, view()) == []


def test_lending_limit_is_a_non_negative_resource_list_at_most_min() -> None:
    def with_limit(text: str) -> Raw:
        return quota(
            "q", min={"cpu": "4"}, max={"cpu": "8"}, annotations={keys.ANNO_LENDING_LIMIT: text}
        )

    assert messages(validate_quota_create(with_limit('{"cpu":"5"}'), view())) == [
        "q lending limit cpu 5 > min 4: a quota can lend at most its min"
    ]
    assert messages(validate_quota_create(with_limit('{"cpu":"-1"}'), view())) == [
        f"q annotation {keys.ANNO_LENDING_LIMIT} has negative values: cpu -1"
    ]
    found = validate_quota_create(with_limit("[1]"), view())
    assert rules(found) == ["lending-limit"]
    assert f"q annotation {keys.ANNO_LENDING_LIMIT} is invalid" in found[0].message
    assert validate_quota_create(with_limit('{"cpu":"4"}'), view()) == []
    assert validate_quota_create(with_limit('{"cpu":"500m"}'), view()) == []


def test_borrowing_limit_is_a_non_negative_resource_list() -> None:
    def with_limit(text: str) -> Raw:
        return quota("q", annotations={keys.ANNO_BORROWING_LIMIT: text})

    assert messages(validate_quota_create(with_limit('{"cpu":"-2"}'), view())) == [
        f"q annotation {keys.ANNO_BORROWING_LIMIT} has negative values: cpu -2"
    ]
    assert rules(validate_quota_create(with_limit("nope"), view())) == ["borrowing-limit"]
    assert validate_quota_create(with_limit('{"cpu":"100"}'), view()) == []


def test_every_independent_violation_is_reported() -> None:
    found = validate_quota_create(
        quota("q", min={"cpu": "5", "memory": "-1"}, max={"cpu": "4", "memory": "1Gi"}), view()
    )
    assert rules(found) == ["negative-min", "min-le-max"]


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


def test_a_parent_cannot_shrink_its_min_below_its_childrens() -> None:
    smaller = with_spec(DEPT, min={"cpu": "5"})
    assert messages(validate_quota_update(DEPT, smaller, view(DEPT, TEAM_A))) == [
        "checkMinQuotaSum all children's MinQuota > current MinQuota, current: dept (sum of its "
        "children's min: cpu 6; its min: cpu 5)"
    ]


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


# -- UPDATE specifics -----------------------------------------------------------------------------


def test_an_update_that_changes_nothing_watched_is_allowed_at_once() -> None:
    broken = quota("q", min={"cpu": "5"}, max={"cpu": "4"})  # admitted before the webhook
    annotated = json.loads(json.dumps(broken))
    annotated["metadata"]["annotations"][keys.ANNO_RUNTIME] = '{"cpu":"1"}'
    annotated["status"] = {"used": {"cpu": "1"}}
    assert quota_unchanged(broken, annotated)
    assert validate_quota_update(broken, annotated, view(broken)) == []
    respecified = with_spec(annotated, max={"cpu": "3"})
    assert not quota_unchanged(broken, respecified)
    assert rules(validate_quota_update(broken, respecified, view(broken))) == ["min-le-max"]


def test_a_changed_limit_annotation_is_checked_too() -> None:
    limited = json.loads(json.dumps(TEAM_A))
    limited["metadata"]["annotations"][keys.ANNO_LENDING_LIMIT] = '{"cpu":"7"}'
    assert messages(validate_quota_update(TEAM_A, limited, view(DEPT, TEAM_A))) == [
        "team-a lending limit cpu 7 > min 6: a quota can lend at most its min"
    ]


@pytest.mark.parametrize("name", [keys.ROOT_QUOTA, keys.SYSTEM_QUOTA])
def test_the_root_and_system_quotas_cannot_be_updated(name: str) -> None:
    reserved = quota(name, namespace="koordinator-system", max={"cpu": "1"})
    changed = with_spec(reserved, max={"cpu": "2"})
    assert messages(validate_quota_update(reserved, changed, view(reserved))) == [
        f"invalid quota {name}: the root and system quotas cannot be updated"
    ]
    annotated = json.loads(json.dumps(reserved))
    annotated["metadata"]["annotations"][keys.ANNO_RUNTIME] = "{}"
    assert validate_quota_update(reserved, annotated, view(reserved)) == []


def test_the_default_quota_can_be_updated() -> None:
    default = quota(keys.DEFAULT_QUOTA, namespace="koordinator-system", max={"cpu": "1"})
    changed = with_spec(default, max={"cpu": "2"})
    assert validate_quota_update(default, changed, view(default)) == []


def test_an_update_of_an_unknown_quota_is_refused() -> None:
    ghost = quota("ghost")
    assert messages(validate_quota_update(ghost, with_spec(ghost, max={"cpu": "1"}), view())) == [
        "UpdateQuota quota not exist in quotaInfoMap:ghost"
    ]


def test_a_child_can_move_to_another_parent_with_room() -> None:
    other = quota("other", is_parent=True, min={"cpu": "6"}, max={"cpu": "20"})
    moved = with_labels(TEAM_A, parent="other")
    assert validate_quota_update(TEAM_A, moved, view(DEPT, TEAM_A, other)) == []
    small = with_spec(other, min={"cpu": "5"})
    assert rules(validate_quota_update(TEAM_A, moved, view(DEPT, TEAM_A, small))) == ["min-sum"]


# -- DELETE ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", keys.RESERVED_QUOTAS)
def test_reserved_quotas_cannot_be_deleted(name: str) -> None:
    reserved = quota(name, namespace="koordinator-system")
    assert messages(validate_quota_delete(reserved, view(reserved))) == [
        f"can not delete quotaGroup :{name}"
    ]


def test_an_unknown_quota_cannot_be_deleted() -> None:
    assert messages(validate_quota_delete(quota("ghost"), view())) == ["not found quota:ghost"]


def test_a_quota_with_children_cannot_be_deleted() -> None:
    assert messages(validate_quota_delete(DEPT, view(DEPT, TEAM_A))) == [
        "delete quota failed, quota dept has 1 child quotas: team-a"
    ]


def test_a_quota_with_labelled_pods_cannot_be_deleted() -> None:
    pods = [pod(f"p{i}", quota_label="team-a") for i in range(3)]
    assert messages(validate_quota_delete(TEAM_A, view(DEPT, TEAM_A, pods=pods))) == [
        "delete quota failed, quota team-a has 3 child pods: team/p0, team/p1, ..."
    ]
    in_its_namespace = [pod("p0", namespace="team-a")]  # label only, as the reference
    assert validate_quota_delete(TEAM_A, view(DEPT, TEAM_A, pods=in_its_namespace)) == []


# -- pods -----------------------------------------------------------------------------------------


def test_pods_cannot_go_to_a_parent_quota() -> None:
    labelled = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "dept"})
    assert messages(validate_pod(labelled, None, view(DEPT, TEAM_A))) == [
        "pod can not be linked to a parentQuotaGroup,quota:dept, pod:web-1"
    ]
    assert validate_pod(pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a"}), None,
                        view(DEPT, TEAM_A)) == []  # fmt: skip


def test_an_update_that_keeps_the_pod_in_its_quota_is_not_refused_for_it() -> None:
    """Deviation: a pod already in a parent quota can still drop a finalizer or a gate."""
    inside = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "dept"})
    finalized = json.loads(json.dumps(inside))
    finalized["metadata"]["finalizers"] = []
    assert validate_pod(finalized, inside, view(DEPT, TEAM_A)) == []
    moved_in = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a"})
    assert rules(validate_pod(inside, moved_in, view(DEPT, TEAM_A))) == ["pod-in-parent"]


def test_a_pod_resolves_to_its_quota_as_the_scheduler_does() -> None:
    same_name = quota("ns-a", namespace="ns-a", is_parent=True)
    listed = quota("lister", is_parent=True, annotations={keys.ANNO_NAMESPACES: '["ns-b"]'})
    cluster = view(same_name, listed, DEPT)
    assert pod_quota(pod_body("x", namespace="ns-a"), cluster) == "ns-a"
    assert pod_quota(pod_body("x", namespace="ns-b"), cluster) == "lister"
    assert pod_quota(pod_body("x", namespace="ns-c"), cluster) == keys.DEFAULT_QUOTA
    unknown = pod_body("x", namespace="ns-a", labels={keys.POD_LABEL_QUOTA: "nope"})
    assert pod_quota(unknown, cluster) == keys.DEFAULT_QUOTA  # an unknown quota: the default
    assert validate_pod(unknown, None, cluster) == []
    assert rules(validate_pod(pod_body("x", namespace="ns-b"), None, cluster)) == ["pod-in-parent"]


def test_the_preemptible_label_cannot_change() -> None:
    key = keys.POD_LABEL_PREEMPTIBLE
    old = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a"})
    new = pod_body("web-1", labels={keys.POD_LABEL_QUOTA: "team-a", key: "false"})
    assert messages(validate_pod(new, old, view(DEPT, TEAM_A))) == [
        f"Preemptible label is forbidden modify now. (pod web-1: {key} '' -> 'false')"
    ]
    assert validate_pod(new, new, view(DEPT, TEAM_A)) == []
    assert validate_pod(new, None, view(DEPT, TEAM_A)) == []  # set at creation: fine


# -- defaults on CREATE ---------------------------------------------------------------------------


def test_the_parent_defaults_to_the_root() -> None:
    defaults = quota_defaults(quota("q"), view())
    assert defaults.labels == {keys.LABEL_PARENT: keys.ROOT_QUOTA}
    alias = quota("q", labels={f"{keys.PREFIX}/parent-quota-name": "dept"})
    assert quota_defaults(alias, view(DEPT)).labels == {keys.LABEL_PARENT: "dept"}
    assert quota_defaults(TEAM_A, view(DEPT)).labels == {}


def test_the_tree_id_is_inherited_from_the_parent() -> None:
    parent = quota("p", is_parent=True, tree="t1")
    assert quota_defaults(quota("c", parent="p"), view(parent)).labels == {keys.LABEL_TREE_ID: "t1"}
    assert quota_defaults(quota("c", parent="p", tree="t9"), view(parent)).labels == {}
    missing = quota_defaults(quota("c", parent="nowhere"), view())
    assert messages(missing.violations) == [
        "fill quota c failed, parent not exist (parent nowhere)"
    ]


def test_the_shared_weight_defaults_to_max_in_canonical_form() -> None:
    created = quota("q", max={"cpu": "4000m", "memory": "8Gi", "pods": 10})
    assert quota_defaults(created, view()).annotations == {
        keys.ANNO_SHARED_WEIGHT: '{"cpu":"4","memory":"8Gi","pods":"10"}'
    }


def test_the_shared_weight_gets_the_keys_of_max_and_keeps_its_values() -> None:
    weight = '{"cpu":"0","nvidia.com/gpu":"3"}'
    created = quota("q", max={"cpu": "4", "memory": "8Gi"},
                    annotations={keys.ANNO_SHARED_WEIGHT: weight})  # fmt: skip
    assert quota_defaults(created, view()).annotations == {
        keys.ANNO_SHARED_WEIGHT: '{"cpu":"0","memory":"8Gi"}'
    }
    synced = quota("q", max={"cpu": "4"}, annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"1"}'})
    assert quota_defaults(synced, view()).annotations == {}
    broken = quota("q", annotations={keys.ANNO_SHARED_WEIGHT: "[]"})
    assert rules(quota_defaults(broken, view()).violations) == ["shared-weight"]


def test_the_root_quota_gets_no_defaults() -> None:
    root = quota(keys.ROOT_QUOTA, namespace="koordinator-system", parent="")
    defaults = quota_defaults(root, view())
    assert (defaults.labels, defaults.annotations, defaults.violations) == ({}, {}, [])


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
    children's mins: the same values, and only keys one of the others has."""
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
                for key, value in facts.min.items():
                    total[key] = total.get(key, 0) + value
        return total

    for but in ("a", "b", "c", "", "stranger"):
        assert view.children_min("dept", but) == naive(but)
    assert "nvidia.com/gpu" not in view.children_min("dept", "a")
    assert view.children_min("dept", "c")["cpu"] == 3000
