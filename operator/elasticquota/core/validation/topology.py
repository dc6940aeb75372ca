"""Topology checks: is-parent changes, tree ids, parents, cycles, resource keys, min sums."""

from __future__ import annotations

from collections.abc import Iterable

from elasticquota.core import keys
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList, add
from elasticquota.core.validation.facts import (
    KEY_CHECK_PREFIX,
    Violation,
    exact_amounts,
    force_update,
    unreadable,
)
from elasticquota.core.validation.messages import exact_text, go_list, some_names
from elasticquota.core.validation.view import ClusterView


def _children(quota: Quota, view: ClusterView) -> list[str]:
    """The children of the quota's name, when it owns its name: a quota left out for sharing
    another quota's name has none (they are the owner's)."""
    return view.children(quota.name) if view.owns_name(quota) else []


def _is_parent_change(
    quota: Quota, stored: Quota | None, view: ClusterView, old_namespaces: Iterable[str]
) -> list[Violation]:
    if stored is None or stored.is_parent == quota.is_parent:
        return []
    if not quota.is_parent:
        children = _children(stored, view)
        if children:
            return [
                Violation(
                    "is-parent-change",
                    "quota has children, isParent is forbidden to modify as false, quotaName:"
                    f"{stored.name} ({len(children)} child quotas: {', '.join(children)})",
                )
            ]
        return []
    pods = view.pods_bound(stored.name, old_namespaces)
    if not pods:
        return []
    return [
        Violation(
            "is-parent-change",
            "quota has bound pods, isParent is forbidden to modify as true, quotaName: "
            f"{stored.name} ({len(pods)} pods: {some_names([pod.key for pod in pods])})",
        )
    ]


def _tree_ids(quota: Quota, stored: Quota | None, view: ClusterView) -> list[Violation]:
    found = []
    name, own = quota.name, quota.tree_id
    if stored is not None and stored.tree_id != own:
        found.append(Violation("tree-id", f"{name} tree id changed [{stored.tree_id}] vs [{own}]"))
    parent = view.quota(quota.parent) if quota.parent != keys.ROOT_QUOTA else None
    if parent is not None and parent.tree_id != own:
        found.append(
            Violation(
                "tree-id",
                f"{name} tree id is different from parent {parent.name}, [{own}] vs "
                f"[{parent.tree_id}]",
            )
        )
    for child_name in _children(quota, view):
        child = view.quota(child_name)
        if child is not None and child.tree_id != own:
            found.append(
                Violation(
                    "tree-id",
                    f"{name} tree id is different from child {child_name}, [{own}] vs "
                    f"[{child.tree_id}]",
                )
            )
    return found


def _parent_chain(quota: Quota, view: ClusterView) -> list[str] | None:
    """The ancestors up to the quota itself when its new parent makes a cycle, else None."""
    chain = [quota.name]
    current = quota.parent
    while current not in (keys.ROOT_QUOTA, ""):
        chain.append(current)
        if current == quota.name:
            return chain
        if chain.count(current) > 1:
            return None  # a cycle above us, not through us: reported on its own members
        facts = view.quota(current)
        if facts is None:
            return None
        current = facts.parent
    return None


def _parent(quota: Quota, view: ClusterView) -> tuple[Quota | None, list[Violation]]:
    """The parent when it is usable (exists, is a parent, no cycle), and what is wrong with it."""
    name, parent_name = quota.name, quota.parent
    cycle = _parent_chain(quota, view)
    if cycle is not None:
        return None, [
            Violation(
                "cycle",
                f"{name} has parentName {parent_name}, which makes a cycle: {' -> '.join(cycle)}",
            )
        ]
    parent = view.quota(parent_name)
    if parent is None:
        return None, [
            Violation(
                "parent-exists",
                f"{name} has parentName {parent_name} but not find parentInfo in quotaInfoMap",
            )
        ]
    if not parent.is_parent:
        return None, [
            Violation(
                "parent-is-parent",
                f"{name} has parentName {parent_name} but the parentQuotaInfo's IsParent is false",
            )
        ]
    return parent, []


def _same_max_keys(upper: Quota, lower: Quota, first: str, second: str) -> list[Violation]:
    if set(upper.max) == set(lower.max):
        return []
    return [
        Violation(
            "max-keys",
            f"{KEY_CHECK_PREFIX}{first}'s max keys are not the same with {second}'s "
            f"({upper.name}: {go_list(sorted(upper.max))}, {lower.name}: "
            f"{go_list(sorted(lower.max))})",
        )
    ]


def _min_keys_included(upper: Quota, lower: Quota) -> list[Violation]:
    missing = sorted(set(lower.min) - set(upper.min))
    if not missing:
        return []
    return [
        Violation(
            "min-keys",
            f"{KEY_CHECK_PREFIX}{lower.name}'s min keys are not all included in {upper.name}'s "
            f"({go_list(missing)} missing from {upper.name}'s min)",
        )
    ]


def _resource_keys(quota: Quota, parent: Quota | None, view: ClusterView) -> list[Violation]:
    """The default gate (``ElasticQuotaEnableUpdateResourceKey`` off): identical max key sets
    along every edge; min keys of a child within its parent's."""
    found = []
    if parent is not None:
        found += _same_max_keys(parent, quota, parent.name, quota.name)
        found += _min_keys_included(parent, quota)
    for child_name in _children(quota, view):
        child = view.quota(child_name)
        if child is not None:
            found += _same_max_keys(quota, child, child_name, quota.name)
            found += _min_keys_included(quota, child)
    return found


def _over(total: ResourceList, limit: ResourceList, holder: Quota) -> list[str]:
    """The resources of ``total`` above ``limit``, the min of ``holder``; a min of it that is not
    a quantity (refused for itself, counted as 0) is not compared."""
    return sorted(
        name
        for name, value in total.items()
        if value > limit.get(name, 0) and not unreadable(holder, "min", name)
    )


def _min_sums(quota: Quota, parent: Quota | None, view: ClusterView) -> list[Violation]:
    """Σ children's min ≤ parent's min, below the top level (skipped with allow-force-update or
    is-root), compared exactly as the reference compares quantities (``exact_amounts``)."""
    if force_update(quota) or quota.is_root:
        return []
    found = []
    own = exact_amounts(quota, "min")
    if parent is not None:
        total = add(view.children_min(parent.name, but=quota.name), own)
        limit = exact_amounts(parent, "min")
        over = _over(total, limit, parent)
        if over:
            found.append(
                Violation(
                    "min-sum",
                    "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: "
                    f"{parent.name} (sum of its children's min with {quota.name}: "
                    f"{exact_text(total, over)}; {parent.name}'s min: "
                    f"{exact_text(limit, over)})",
                )
            )
    children = _children(quota, view)
    total = view.children_min(quota.name, but="")
    over = _over(total, own, quota)
    if children and over:
        found.append(
            Violation(
                "min-sum",
                "checkMinQuotaSum all children's MinQuota > current MinQuota, current: "
                f"{quota.name} (sum of its children's min: {exact_text(total, over)}; "
                f"its min: {exact_text(own, over)})",
            )
        )
    return found


def topology_violations(
    quota: Quota,
    stored: Quota | None,
    view: ClusterView,
    old_namespaces: Iterable[str] = (),
) -> list[Violation]:
    """The topology checks in order; ``stored`` is the operator's copy on UPDATE, None on CREATE."""
    if quota.name == keys.ROOT_QUOTA:
        return []
    found = [
        *_is_parent_change(quota, stored, view, old_namespaces),
        *_tree_ids(quota, stored, view),
    ]
    if quota.parent == keys.ROOT_QUOTA and not quota.is_parent:
        return found  # a top-level leaf: nothing above or below to compare with
    parent = None
    if quota.parent != keys.ROOT_QUOTA:
        parent, problems = _parent(quota, view)
        found += problems
        if problems:
            return found
    found += _resource_keys(quota, parent, view)
    found += _min_sums(quota, parent, view)
    return found
