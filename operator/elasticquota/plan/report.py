"""The ``plan -o json`` contract: a stable, documented shape (see README, "plan JSON output").

Resource lists (RL) are maps from resource name to a Kubernetes quantity string, keys sorted.
``users`` and ``groups`` (user and group limits, ``core.userlimits``): per user (group), per quota
on the path of its pods or where a limit names it, ``used`` (RL, with ``pods``), ``applications``
(running), ``maxResources`` / ``maxApplications`` of the limit in force (null: none) and ``limit``
(the limit object's ``limit`` text, ``*`` through a wildcard, else its position ``#N``).
"""

from __future__ import annotations

from typing import Any

from elasticquota.core.decisions.budgets import refused_evictions
from elasticquota.core.decisions.minruntime import moment_text
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.resources import format_resource_list
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.plan.compute import Plan
from elasticquota.plan.findings import problem_entry


def quota_entry(result: QuotaResult) -> dict[str, Any]:
    """One quota's figures under the contract's field names."""
    rl = format_resource_list
    return {
        "namespace": result.namespace,
        "tree": result.tree,
        "parent": result.parent,
        "isParent": result.is_parent,
        "min": rl(result.min),
        "max": rl(result.max),
        "effectiveMin": rl(result.effective_min),
        "sharedWeight": rl(result.shared_weight),
        "request": rl(result.request),
        "childRequest": rl(result.child_request),
        "limitedRequest": rl(result.limited_request),
        "used": rl(result.used),
        "runtime": rl(result.runtime),
        "nonPreemptibleRequest": rl(result.non_preemptible_request),
        "nonPreemptibleUsed": rl(result.non_preemptible_used),
    }


def quotas_section(snapshot: Snapshot) -> dict[str, Any]:
    """``quotas``: every quota's entry, by name (``tree -o json`` shows the same)."""
    return {name: quota_entry(snapshot.quotas[name]) for name in sorted(snapshot.quotas)}


def trees_section(snapshot: Snapshot) -> dict[str, Any]:
    """``trees``: each tree's total and profile, by tree (``tree -o json`` shows the same)."""
    return {
        tree: {
            "total": format_resource_list(total),
            "profile": snapshot.tree_profiles.get(tree, ""),
        }
        for tree, total in sorted(snapshot.totals.items())
    }


def _spared_entry(plan: Plan, quota: str) -> dict[str, Any]:
    """``spared``: the pods the round spares for their minimum runtime, and until when (omitted
    when there are none, as without ``--revocation-min-runtime``)."""
    spared = plan.spared.get(quota)
    if not spared:
        return {}
    return {"spared": [{"pod": pod.key, "until": moment_text(until)} for pod, until in spared]}


def _budgets_entry(plan: Plan, victims: list[PodInfo]) -> dict[str, Any]:
    """``keptByBudgets``: the victims whose eviction a PodDisruptionBudget would refuse now, and
    why (omitted when there are none)."""
    kept = refused_evictions(victims, plan.budgets)
    if not kept:
        return {}
    return {"keptByBudgets": [{"pod": pod.key, "reason": why} for pod, why in kept]}


def plan_report(plan: Plan) -> dict[str, Any]:
    """The whole JSON document."""
    snapshot = plan.snapshot
    return {
        "quotas": quotas_section(snapshot),
        "trees": trees_section(snapshot),
        "revocations": [
            {
                "quota": quota,
                "pods": [pod.key for pod in victims],
                **_spared_entry(plan, quota),
                **_budgets_entry(plan, victims),
            }
            for quota, victims in plan.revocations
        ],
        "admission": [
            {
                "pod": verdict.pod,
                "quota": verdict.quota,
                "admitted": verdict.admitted,
                "reason": verdict.reason,
            }
            for verdict in plan.admission
        ],
        "preemptions": [
            {
                "quota": preemption.quota,
                "pod": preemption.waiting.key,
                "victims": [victim.key for victim in preemption.victims],
                **_budgets_entry(plan, preemption.victims),
            }
            for preemption in plan.preemptions
        ],
        "problems": [
            problem_entry(problem, plan.origins) for problem in [*plan.problems, *plan.notes]
        ],
        **snapshot.user_limits.usage_document(),
    }
