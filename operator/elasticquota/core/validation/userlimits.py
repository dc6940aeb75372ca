"""The ``elasticquota.dev/user-limits`` annotation at quota admission: the same rules as ``plan``.

A quota CREATE or UPDATE is refused when it brings a user-limit problem the tree did not have:
YuniKorn's per-quota rules on its own annotation (semantics §2 rules 1-10, against its own
``spec.max``), its limits against its ancestors' (rules 11-13), and its descendants' limits against
its own (a lowered limit that a lower quota's limit no longer fits in). The checks are
``core.userlimits`` themselves (``change_problems``), so the webhook refuses exactly what ``plan``
and the engine report as problems. Problems the tree already had are not the request's fault.
"""

from __future__ import annotations

from elasticquota.core import keys
from elasticquota.core.model.quota import Quota
from elasticquota.core.userlimits import QuotaLimitSource, change_problems
from elasticquota.core.validation.facts import (
    Violation,
)
from elasticquota.core.validation.view import ClusterView


def user_limit_violations(quota: Quota, stored: Quota | None, view: ClusterView) -> list[Violation]:
    """Every user-limit problem the request brings, as violations naming the quota, the limit
    object and the rule. ``stored``: the quota's current copy (None on CREATE)."""
    text = quota.annotations.get(keys.ANNO_USER_LIMITS)
    chain = _ancestors(quota, view)
    subtree = _descendants(quota.name, view)
    if not _has_limits(text) and not any(
        _has_limits(item.annotations.get(keys.ANNO_USER_LIMITS)) for item in (*chain, *subtree)
    ):
        return []  # no limit anywhere on the way: nothing to check
    around = [_source(item) for item in (*chain, *subtree)]
    after = [*around, _source(quota)]
    before = [*around, _source(stored)] if stored is not None else around
    return [
        Violation(f"user-limits:{problem.rule}", problem.statement)
        for problem in change_problems(before, after)
    ]


def _has_limits(text: str | None) -> bool:
    return bool(text and text.strip())


def _source(quota: Quota) -> QuotaLimitSource:
    parent = quota.parent
    return QuotaLimitSource(
        quota.name,
        None if parent in ("", keys.ROOT_QUOTA) else parent,
        quota.annotations.get(keys.ANNO_USER_LIMITS),
        quota.max,
    )


def _ancestors(quota: Quota, view: ClusterView) -> list[Quota]:
    """The quotas above, nearest first (a parent cycle or a missing parent ends the walk)."""
    chain: list[Quota] = []
    seen = {quota.name}
    parent = quota.parent
    while parent not in ("", keys.ROOT_QUOTA) and parent not in seen:
        found = view.quota(parent)
        if found is None:
            break
        chain.append(found)
        seen.add(parent)
        parent = found.parent
    return chain


def _descendants(name: str, view: ClusterView) -> list[Quota]:
    """The quotas below ``name``, breadth first (each once)."""
    found: list[Quota] = []
    seen = {name}
    queue = [name]
    while queue:
        for child in view.children(queue.pop(0)):
            if child in seen:
                continue
            seen.add(child)
            facts = view.quota(child)
            if facts is not None:
                found.append(facts)
                queue.append(child)
    return found
