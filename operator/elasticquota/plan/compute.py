"""What-if: the state the operator would compute for a set of manifests.

Profiles are applied first, exactly as the operator's profile controller would (their root quotas
are created or overwritten), then every object is parsed, fed to the engine and solved; admission
verdicts for pending pods (``gating.pending_verdicts``: a gated pod's is the gate's decision, a pod
the gate released waits for the scheduler), the next gate round's in-quota preemptions and the
next revocation round are derived from the snapshot.

The problems are the operator's (what the engine and the parsers report), then every refusal the
admission webhooks would give an object of the set (``core.decisions.manifest_set``: the same
functions the webhook handlers call, each quota judged against the others), then what nothing
reads (``plan.lint``: unknown fields, resource names, label and annotation keys).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from elasticquota.api.parse import (
    QuotaParse,
    parse_node,
    parse_pod,
    parse_profile,
    parse_quota_object,
    released_by_gate,
)
from elasticquota.core.decisions.admission import Verdict
from elasticquota.core.decisions.budgets import PodBudgets
from elasticquota.core.decisions.gating import GateDecision, gate_decisions, pending_verdicts
from elasticquota.core.decisions.manifest_set import validate_manifest_set
from elasticquota.core.decisions.minruntime import (
    NO_MIN_RUNTIMES,
    MinRuntime,
    MinRuntimes,
    of_preemption,
)
from elasticquota.core.decisions.preemption import PreemptionMemo, preemption_victims
from elasticquota.core.decisions.revocation import RoundChoice, revocation_choices
from elasticquota.core.model.models import NodeInfo, PodInfo, Problem, ProfileSpec
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.tree.profiles import root_owners, root_quota_manifest, tree_profiles
from elasticquota.plan.budgets import pod_budgets
from elasticquota.plan.findings import Finding, Origin, object_ref
from elasticquota.plan.lint import manifest_findings
from elasticquota.plan.loader import Manifests


@dataclass(frozen=True, slots=True)
class Preemption:
    """One in-quota preemption of the next gate round: the pods evicted to make room for a pod
    waiting at the gate, lower-priority pods of its quota (eviction order)."""

    quota: str
    waiting: PodInfo
    victims: list[PodInfo]


@dataclass(slots=True)
class Plan:
    """Everything ``plan`` reports."""

    snapshot: Snapshot
    admission: list[Verdict]
    revocations: list[tuple[str, list[PodInfo]]]
    problems: list[Problem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: Notes on what was read and not used (objects of other kinds), never failing.
    notes: list[Problem] = field(default_factory=list)
    #: Where each object was read (``Manifests.origins``).
    origins: dict[tuple[str, str, str], Origin] = field(default_factory=dict)
    #: The pods the admission gate has released (condition ``ElasticQuotaAdmission`` True), by key.
    released: frozenset[str] = frozenset()
    #: By over-used quota: the pods the next round spares for their minimum runtime, and when each
    #: may go (``revocation_min_runtime``; empty without one).
    spared: dict[str, list[tuple[PodInfo, float]]] = field(default_factory=dict)
    #: Revocation's protection of young pods by quota (the annotations of the quotas read, over
    #: ``compute_plan``'s ``min_runtime``).
    min_runtimes: MinRuntimes = NO_MIN_RUNTIMES
    #: The next gate round's in-quota preemptions (``next_preemptions``).
    preemptions: list[Preemption] = field(default_factory=list)
    #: In-quota preemption's protection of young pods by quota (the quotas' annotations over
    #: ``compute_plan``'s ``preemption_min_runtime``): ``explain`` says what preemption does.
    preemption_min_runtimes: MinRuntimes = NO_MIN_RUNTIMES
    #: The PodDisruptionBudgets of the input, by the pods they select (``explain`` and the
    #: reports say which victims' evictions they would refuse: ``budgets.eviction_refusal``).
    budgets: PodBudgets = field(default_factory=dict)


def compute_plan(
    manifests: Manifests,
    settings: EngineSettings | None = None,
    check_ancestors: bool = False,
    judge: bool = False,
    min_runtime: MinRuntime | None = None,
    preemption_min_runtime: MinRuntime | None = None,
) -> Plan:
    """Parse, apply profiles, solve, and derive admission and revocation (pods younger than
    their quota's ``revocation-min-runtime`` annotation, else ``min_runtime``'s seconds, spared;
    None: 0 s, judged as of now; ``preemption_min_runtime`` likewise for in-quota preemption's
    ``preemption_min_runtimes``); with ``judge`` (the ``plan`` command), also the webhooks' refusals
    and the schema's warnings (``plan.lint``), which cost about as much again as the rest on a
    large cluster's objects."""
    problems = list(manifests.problems)
    for kind, raws in (
        ("ElasticQuota", manifests.quotas),
        ("Pod", manifests.pods),
        ("Node", manifests.nodes),
        ("ElasticQuotaProfile", manifests.profiles),
        ("PodDisruptionBudget", manifests.budgets),
    ):
        _report_duplicates(kind, raws, problems)
    nodes: list[NodeInfo] = _parse_all(parse_node, manifests.nodes, problems)
    profiles: list[ProfileSpec] = _parse_all(parse_profile, manifests.profiles, problems)
    raw_quotas = _apply_profiles(manifests.quotas, profiles, nodes, problems)
    parses = [parse_quota_object(raw) for raw in raw_quotas]
    problems += [problem for parse in parses for problem in parse.problems]
    quotas = [parse.quota for parse in parses if parse.usable and parse.quota is not None]
    priced = _with_priorities(manifests.pods, manifests.priority_classes, problems)
    pods: list[PodInfo] = _parse_all(parse_pod, priced, problems)
    engine = QuotaEngine(settings).load(quotas=quotas, pods=pods, nodes=nodes)
    _hold_names(engine, parses)
    snapshot = replace(engine.solve(), tree_profiles=tree_profiles(raw_quotas))
    released = _released(manifests.pods)
    now = MinRuntime(0.0, time.time())
    min_runtimes = MinRuntimes(min_runtime or now, engine.quota)
    preemption = MinRuntimes(preemption_min_runtime or now, engine.quota, of_preemption)
    choices = revocation_choices(snapshot, min_runtimes)
    decided = gate_decisions(snapshot, check_ancestors)
    budgets = pod_budgets(manifests.budgets, manifests.pods, problems)
    return Plan(
        snapshot=snapshot,
        admission=pending_verdicts(snapshot, check_ancestors, released, decided),
        preemptions=next_preemptions(snapshot, decided, preemption),
        revocations=[(quota, choice.victims) for quota, choice in choices],
        spared=_spared(choices),
        min_runtimes=min_runtimes,
        preemption_min_runtimes=preemption,
        problems=problems + snapshot.problems + (_judged(manifests, raw_quotas) if judge else []),
        skipped=list(manifests.skipped),
        notes=list(manifests.notes),
        origins=dict(manifests.origins),
        released=released,
        budgets=budgets,
    )


def next_preemptions(
    snapshot: Snapshot, decided: list[GateDecision], young: MinRuntimes
) -> list[Preemption]:
    """The in-quota preemptions of the next gate round, as the operator's round makes them: for
    the pods the gate holds for their quota (a limit's are left: evictions would not lift it), in
    the gate's order, the victims of the first of each quota that lower-priority pods of its
    quota make room for (one preemption per quota and round); pods younger than their minimum
    runtime (``young``) are not chosen. ``decided``: the gate's decisions on ``snapshot``
    (``gate_decisions``). A PodDisruptionBudget may keep a victim (``Plan.budgets`` says which
    would): the operator then chooses others, which a plan does not choose ahead."""
    memo, found = PreemptionMemo(), dict[str, Preemption]()
    for decision in decided:
        quota = snapshot.pod_quota[decision.pod.key]
        if decision.release or decision.verdict.limit_refusals or quota in found:
            continue
        victims = preemption_victims(decision.seen, decision.pod, memo, young=young.of(quota))
        if victims:
            found[quota] = Preemption(quota, decision.pod, victims)
    return list(found.values())


def _spared(choices: list[tuple[str, RoundChoice]]) -> dict[str, list[tuple[PodInfo, float]]]:
    """Of each quota a round is due for, the pods spared for their minimum runtime, when each may
    go."""
    return {
        quota: [(pod, choice.min_runtime.ends(pod)) for pod in choice.spared]
        for quota, choice in choices
        if choice.spared
    }


def _released(raw_pods: list[dict[str, Any]]) -> frozenset[str]:
    """The keys of the pods the gate has released (of a pod given twice, the last copy says)."""
    last = {"/".join(_quota_key(raw)): released_by_gate(raw) for raw in raw_pods}
    return frozenset(key for key, released in last.items() if released)


def _judged(manifests: Manifests, raw_quotas: list[dict[str, Any]]) -> list[Problem]:
    """The webhooks' refusals, then the schema's warnings."""
    return [
        *webhook_findings(raw_quotas, manifests.pods),
        *manifest_findings(manifests.quotas, manifests.profiles, manifests.pods),
    ]


def webhook_findings(
    raw_quotas: list[dict[str, Any]], raw_pods: list[dict[str, Any]]
) -> list[Problem]:
    """Each refusal of the admission webhooks, with the webhook's message and rule id."""
    return [
        Finding(
            object_ref(refusal.kind, refusal.namespace, refusal.name),
            refusal.violation.message,
            rule=refusal.violation.rule,
            source="webhook",
        )
        for refusal in validate_manifest_set(raw_quotas, raw_pods)
    ]


def _hold_names(engine: QuotaEngine, parses: list[QuotaParse]) -> None:
    """Quotas left out for their spec still own their names, as in the operator."""
    for parse in parses:
        if not parse.usable and parse.quota is not None:
            engine.hold_name(parse.quota)


def _parse_all(parser: Any, raws: list[dict[str, Any]], problems: list[Problem]) -> list[Any]:
    parsed = []
    for raw in raws:
        value, found = parser(raw)
        problems.extend(found)
        if value is not None:
            parsed.append(value)
    return parsed


def _apply_profiles(
    raw_quotas: list[dict[str, Any]],
    profiles: list[ProfileSpec],
    nodes: list[NodeInfo],
    problems: list[Problem],
) -> list[dict[str, Any]]:
    """The quota manifests after every profile has written its root quota."""
    by_key = {_quota_key(raw): raw for raw in raw_quotas}
    order = list(dict.fromkeys(_quota_key(raw) for raw in raw_quotas))
    owners, ignored = root_owners(profiles)
    problems.extend(problem for _, problem in ignored)
    for profile in owners:
        key = (profile.namespace, profile.quota_name)
        if key not in by_key:
            order.append(key)
        by_key[key] = root_quota_manifest(profile, nodes, by_key.get(key))
    return [by_key[key] for key in order]


#: The classes every API server creates at start-up: a pod may name them without a manifest.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}


def _with_priorities(
    pods: list[dict[str, Any]], classes: list[dict[str, Any]], problems: list[Problem]
) -> list[dict[str, Any]]:
    """Pods with ``spec.priority`` filled in from their PriorityClass, as the API server does.

    A pod that names no class gets the class marked ``globalDefault``, else 0; a class that is not
    in the input (nor one of the API server's own) is a problem and counts as 0. The operator reads
    the same ``spec.priority`` from the API server, so both order revocation victims alike.
    """
    values, default = _class_values(classes, problems)
    resolved = []
    for raw in pods:
        spec = raw.get("spec")
        if not isinstance(spec, dict) or spec.get("priority") is not None:
            resolved.append(raw)
            continue
        name = spec.get("priorityClassName")
        if name and name not in values:
            meta = raw["metadata"] if isinstance(raw.get("metadata"), dict) else {}
            ref = f"Pod {meta.get('namespace', '')}/{meta.get('name', '<unnamed>')}"
            problems.append(Problem(ref, f"PriorityClass {name!r} is not in the input; priority 0"))
        priority = values.get(name, 0) if name else default
        resolved.append({**raw, "spec": {**spec, "priority": priority}})
    return resolved


def _class_values(
    classes: list[dict[str, Any]], problems: list[Problem]
) -> tuple[dict[str, int], int]:
    """Each class's value (the API server's own classes included) and the ``globalDefault`` one.

    A class whose value is not an integer is a problem and is left out (the API refuses it).
    """
    values = dict(SYSTEM_PRIORITY_CLASSES)
    default: int | None = None
    for item in classes:
        metadata = item.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            problems.append(
                Problem("PriorityClass /<unnamed>", "no metadata.name; ignored", left_out=True)
            )
            continue
        name, raw = str(metadata.get("name")), item.get("value") or 0
        value = _integer(raw)
        if value is None:
            problems.append(
                Problem(f"PriorityClass /{name}", f"value {raw!r} is not an integer; ignored")
            )
            continue
        values[name] = value
        if item.get("globalDefault") and default is None:
            default = value
    return values, default or 0


def _integer(raw: Any) -> int | None:
    """An integer, also when quoted in YAML (``"100"``); None for anything else."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().removeprefix("-").isdigit():
        return int(raw)
    return None


def _report_duplicates(kind: str, raws: list[dict[str, Any]], problems: list[Problem]) -> None:
    """The same object given twice: the last copy wins, and that is said."""
    seen: set[tuple[str, str]] = set()
    for raw in raws:
        key = _quota_key(raw)
        if key in seen:
            problems.append(
                Problem(
                    f"{kind} {key[0]}/{key[1]}",
                    "the object appears more than once in the input; the last copy is used",
                )
            )
        seen.add(key)


def _quota_key(raw: dict[str, Any]) -> tuple[str, str]:
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict):
        return ("", "")
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
