"""The defaults the mutating webhook gives a quota on CREATE, one at a time: the parent, the
tree id and the shared weight, and none for the root quota."""

from __future__ import annotations

from rule_objects import DEPT, TEAM_A, messages, quota, rules, view

from elasticquota.core import keys
from elasticquota.core.decisions.mutation import quota_defaults

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
