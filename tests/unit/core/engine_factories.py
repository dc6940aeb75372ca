"""Small factories for engine tests: quotas, pods and nodes in engine units.

Resource lists are plain dicts in engine units (cpu in millicores, everything else in whole units);
the water-filling rules do not care about units, so most tests use small cpu numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from elasticquota.core.keys import DEFAULT_TREE, ROOT_QUOTA
from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.results import QuotaResult, Snapshot

#: ``make_engine(**EngineSettings fields)`` and ``solve(quotas, pods, nodes, **settings)`` fixtures.
EngineFactory = Callable[..., QuotaEngine]
SolveFunction = Callable[..., Snapshot]

NAMESPACE = "team"
BIG = 1_000_000


def quota(
    name: str,
    min: ResourceList | None = None,
    max: ResourceList | None = None,
    parent: str = ROOT_QUOTA,
    *,
    namespace: str = NAMESPACE,
    weight: ResourceList | None = None,
    namespaces: Iterable[str] = (),
    total: ResourceList | None = None,
    **fields: Any,
) -> Quota:
    """One ElasticQuota; ``weight`` is the shared-weight annotation, ``total`` total-resource;
    the other keywords are ``Quota``'s own fields (``is_parent``, ``tree_id``, ``lending_limit``,
    ``user_limits`` ...), passed as they are."""
    return Quota(
        name=name,
        namespace=namespace,
        min=dict(min or {}),
        max=dict(max or {}),
        parent=parent,
        shared_weight=weight,
        namespaces=tuple(namespaces),
        total_resource=total,
        **fields,
    )


def pod(
    name: str,
    quota: str = "",
    *,
    namespace: str = NAMESPACE,
    node: str = "",
    phase: str | None = None,
    preemptible: bool = True,
    priority: int = 0,
    gates: tuple[str, ...] = (),
    user: str = "",
    groups: tuple[str, ...] = (),
    application: str = "",
    **requests: int,
) -> PodInfo:
    """One pod labelled with ``quota`` (if given); bound to ``node`` means Running by default;
    ``gates`` its scheduling gates; ``user``, ``groups`` and ``application`` who runs it."""
    return PodInfo(
        namespace=namespace,
        name=name,
        requests=dict(requests),
        quota_label=quota,
        preemptible=preemptible,
        priority=priority,
        phase=phase or ("Running" if node else "Pending"),
        node_name=node,
        scheduling_gates=gates,
        user=user,
        groups=groups,
        application=application,
    )


def node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    **allocatable: int,
) -> NodeInfo:
    """One node with the given allocatable resources."""
    return NodeInfo(
        name=name,
        allocatable=dict(allocatable),
        labels=dict(labels or {}),
        unschedulable=unschedulable,
        ready=ready,
    )


def loaded_engine(make_engine: EngineFactory, *, solved: bool = False) -> QuotaEngine:
    """Quota ``a`` (min 10) with a pending pod of 30 cpu, quota ``b`` with a pod of 20 bound to
    node ``n`` (100 cpu): the cluster the step-by-step solve and rebuild tests start from."""
    engine = make_engine().load(
        [quota("a", min={"cpu": 10}, max={"cpu": BIG}), quota("b", max={"cpu": BIG})],
        [pod("x", "a", cpu=30), pod("y", "b", node="n", cpu=20)],
        [node("n", cpu=100)],
    )
    if solved:
        engine.solve()
    return engine


#: Every resource-list figure of a ``QuotaResult``.
RESULT_FIGURES = (
    "min",
    "max",
    "effective_min",
    "shared_weight",
    "request",
    "child_request",
    "limited_request",
    "used",
    "runtime",
    "non_preemptible_request",
    "non_preemptible_used",
)


def quota_result(
    name: str,
    *,
    namespace: str | None = None,
    parent: str = ROOT_QUOTA,
    reserved: bool = False,
    **figures: Mapping[str, int],
) -> QuotaResult:
    """A solved leaf of the default tree, as hand-made input for the decisions: every figure
    (``RESULT_FIGURES``) empty unless given; the namespace is the name unless given."""
    values: dict[str, Any] = {field: dict(figures.get(field, {})) for field in RESULT_FIGURES}
    return QuotaResult(
        name=name,
        namespace=name if namespace is None else namespace,
        tree=DEFAULT_TREE,
        parent=parent,
        is_parent=False,
        reserved=reserved,
        **values,
    )


def runtimes(snapshot: Snapshot, resource: str, *names: str) -> dict[str, int | None]:
    """``{name: runtime[resource]}`` for the named quotas (None when the key is absent)."""
    return {name: snapshot.quotas[name].runtime.get(resource) for name in names}


def field_of(snapshot: Snapshot, field: str, resource: str, *names: str) -> dict[str, int | None]:
    """``{name: <field>[resource]}`` for any resource-list field of ``QuotaResult``."""
    return {name: getattr(snapshot.quotas[name], field).get(resource) for name in names}
