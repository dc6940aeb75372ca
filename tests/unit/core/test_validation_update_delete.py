"""The admission rules particular to UPDATE and DELETE of a quota, one rule at a time: what an
update may skip or change, and the quotas that cannot be updated or deleted, each refused with the
quota and the reason in its message."""

from __future__ import annotations

import json

import pytest
from rule_objects import DEPT, TEAM_A, messages, pod, quota, rules, view, with_labels, with_spec

from elasticquota.core import keys
from elasticquota.core.validation import (
    quota_unchanged,
    validate_quota_delete,
    validate_quota_update,
)

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
