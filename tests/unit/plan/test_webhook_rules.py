"""``plan`` applies every rule of the quota and pod webhooks, from the same functions.

Table-driven: for each rule, a cluster's quotas and a new object the webhook refuses for it. The
webhook's verdict is computed as its handlers compute it (``controller.webhooks.admission``:
``quota_defaults`` for mutate-elasticquota, whose refusal ends the request, then
``validate_quota_create`` on the defaulted object; ``validate_pod`` for validate-pod), against a
view of the cluster's quotas, and checked against the answer of the operator's own handlers
(``Admission`` over a memory holding the cluster). ``plan`` gets the cluster's quotas and the new
object as one set of manifests, and must report each of the webhook's refusals on the new object,
with its rule id and the very same message.

``test_every_rule_has_a_case`` reads the rule ids out of ``core/validation`` and ``core/mutation``:
a new rule without a case here (or a reason why a set of manifests cannot break it) fails it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kopf
import pytest

from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import Admission
from elasticquota.core import keys
from elasticquota.core.decisions.manifest_set import CHANGE_ONLY_RULES, with_defaults
from elasticquota.core.decisions.mutation import quota_defaults
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.core.validation import (
    ANNO_MAX_STRICT_CHECK_KEYS,
    ClusterView,
    Violation,
    validate_pod,
    validate_quota_create,
)
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import Manifests
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import K8s


def _builders() -> type[K8s]:
    """This directory's ``K8s`` at import time, for the table (``import conftest`` would be
    ambiguous: several test directories have one)."""
    spec = importlib.util.spec_from_file_location(
        "plan_conftest", Path(__file__).with_name("conftest.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    builders: type[K8s] = module.K8s
    return builders


_K8s = _builders()

q = _K8s.quota
CPU = {"cpu": "10"}
CPU_MEM = {"cpu": "10", "memory": "10Gi"}
USER_LIMITS_AFTER_WILDCARD = (
    '- limit: "all"\n  users: ["*"]\n  maxapplications: 2\n'
    '- limit: "late"\n  users: ["amy"]\n  maxapplications: 1\n'
)


@dataclass(frozen=True)
class Case:
    rule: str
    new: dict[str, Any]
    cluster: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.rule


PARENT = q("p", CPU, CPU, is_parent=True)
LENDING, BORROWING = keys.ANNO_LENDING_LIMIT, keys.ANNO_BORROWING_LIMIT
CASES = [
    Case("quantity", q("a", max={"cpu": "lots"})),
    Case("namespaces-annotation", q("a", max=CPU, annotations={keys.ANNO_NAMESPACES: "x, y"})),
    Case("name-unique", q("a", max=CPU, namespace="zz"), [q("a", max=CPU, namespace="aa")]),
    Case(
        "namespaces-unique", q("b", max=CPU, namespaces=["n"]), [q("a", max=CPU, namespaces=["n"])]
    ),
    Case(
        "tree-id",
        q("c", max=CPU, parent="p", labels={keys.LABEL_TREE_ID: "t2"}),
        [q("p", CPU, CPU, is_parent=True, labels={keys.LABEL_TREE_ID: "t1"})],
    ),
    Case(
        "cycle",
        q("a", max=CPU, parent="b", is_parent=True),
        [q("b", max=CPU, parent="a", is_parent=True)],
    ),
    # validate-elasticquota's (the tree id label spares the mutating webhook the lookup)
    Case("parent-exists", q("c", max=CPU, parent="gone", labels={keys.LABEL_TREE_ID: "t"})),
    Case("parent-is-parent", q("c", max=CPU, parent="p"), [q("p", CPU, CPU)]),
    Case("max-keys", q("c", max=CPU, parent="p"), [q("p", CPU_MEM, CPU_MEM, is_parent=True)]),
    Case(
        "min-keys",
        q("c", {"memory": "1Gi"}, CPU_MEM, parent="p"),
        [q("p", CPU, CPU_MEM, is_parent=True)],
    ),
    # the case: a child whose min exceeds its parent's min
    Case(
        "min-sum",
        q("c", {"cpu": "4"}, CPU, parent="p"),
        [q("p", {"cpu": "2"}, CPU, is_parent=True)],
    ),
    Case("negative-max", q("a", max={"cpu": "-1"})),
    Case("negative-min", q("a", {"cpu": "-1"}, CPU)),
    Case("shared-weight", q("a", max=CPU, shared_weight={"cpu": "-1"})),
    Case("min-key-in-max", q("a", {"memory": "1Gi"}, CPU)),
    Case("min-le-max", q("a", {"cpu": "20"}, CPU)),
    Case("max-strict-keys", q("a", max=CPU, annotations={ANNO_MAX_STRICT_CHECK_KEYS: "cpu"})),
    Case("lending-limit", q("a", {"cpu": "1"}, CPU, annotations={LENDING: '{"cpu": "5"}'})),
    Case("borrowing-limit", q("a", max=CPU, annotations={BORROWING: '{"cpu": "-1"}'})),
    Case(
        "revocation-min-runtime",
        q("a", max=CPU, annotations={keys.ANNO_REVOCATION_MIN_RUNTIME: "ten minutes"}),
    ),
    # mutate-elasticquota's refusals
    Case("label-value", q("c", max=CPU, parent="dépt")),
    Case("parent-exists", q("c", max=CPU, parent="gone")),
    Case("shared-weight", q("a", max=CPU, annotations={keys.ANNO_SHARED_WEIGHT: "[1]"})),
    Case(
        "user-limits:user-after-wildcard",
        q("a", max=CPU, annotations={keys.ANNO_USER_LIMITS: USER_LIMITS_AFTER_WILDCARD}),
    ),
    Case("pod-in-parent", _K8s.pod("w", "team", {"cpu": "1"}, quota="p"), [PARENT]),
]


def webhook_verdict(case: Case) -> list[Violation]:
    """What the API server answers for the new object: the handlers' calls, in their order."""
    view = ClusterView(case.cluster)
    if case.new["kind"] == "Pod":
        return validate_pod(case.new, None, view)
    defaults = quota_defaults(case.new, view)
    if defaults.violations:
        return defaults.violations
    return validate_quota_create(
        with_defaults(case.new, defaults.labels, defaults.annotations), view
    )


def plan_refusals(case: Case) -> list[tuple[str, str, str]]:
    """(object, rule, message) of every webhook refusal ``plan`` reports for the set."""
    pods = [case.new] if case.new["kind"] == "Pod" else []
    return set_refusals([*case.cluster, *([] if pods else [case.new])], pods)


def set_refusals(
    quotas: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> list[tuple[str, str, str]]:
    plan = compute_plan(Manifests(quotas=quotas, pods=pods), judge=True)
    return [
        (p.object, getattr(p, "rule", ""), p.message)
        for p in plan.problems
        if getattr(p, "source", "") == "webhook"
    ]


def ref(raw: dict[str, Any]) -> str:
    return f"{raw['kind']} {raw['metadata']['namespace']}/{raw['metadata']['name']}"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_plan_reports_what_the_webhook_refuses(case: Case) -> None:
    refused = webhook_verdict(case)
    assert case.rule in [violation.rule for violation in refused]  # the case is a real refusal
    reported = plan_refusals(case)
    for violation in refused:
        assert (ref(case.new), violation.rule, violation.message) in reported


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_cluster_alone_is_clean(case: Case) -> None:
    """The refusal is the new object's: without it, the set breaks no such rule."""
    assert case.rule not in [rule for _, rule, _ in set_refusals(case.cluster, [])]


def test_a_clean_set_has_no_refusal(k8s: type[K8s]) -> None:
    parent = k8s.quota("p", {"cpu": "4"}, CPU, is_parent=True)
    children = [k8s.quota(name, {"cpu": "2"}, CPU, parent="p") for name in ("a", "b")]
    assert plan_refusals(Case("", parent, children)) == []


def test_a_min_sum_is_reported_on_each_quota_it_involves(k8s: type[K8s]) -> None:
    parent = k8s.quota("p", {"cpu": "3"}, CPU, is_parent=True)
    children = [k8s.quota(name, {"cpu": "2"}, CPU, parent="p") for name in ("a", "b")]
    reported = {(obj, rule) for obj, rule, _ in plan_refusals(Case("", parent, children))}
    assert reported == {
        ("ElasticQuota a/a", "min-sum"),
        ("ElasticQuota b/b", "min-sum"),
        ("ElasticQuota p/p", "min-sum"),
    }


def test_of_quotas_sharing_a_name_only_the_one_left_out_is_refused(k8s: type[K8s]) -> None:
    first = k8s.quota("a", max=CPU, namespace="aa")
    second = k8s.quota("a", max=CPU, namespace="zz")
    reported = plan_refusals(Case("", second, [first]))
    assert [(obj, rule) for obj, rule, _ in reported] == [("ElasticQuota zz/a", "name-unique")]


def test_a_tree_id_is_inherited_down_the_tree_as_the_mutating_webhook_fills_it(
    k8s: type[K8s],
) -> None:
    top = k8s.quota("top", CPU, CPU, is_parent=True, labels={keys.LABEL_TREE_ID: "t1"})
    middle = k8s.quota("mid", CPU, CPU, parent="top", is_parent=True)
    leaf = k8s.quota("leaf", CPU, CPU, parent="mid")
    assert plan_refusals(Case("", leaf, [middle, top])) == []  # listed children first


# -- every rule has a case ----------------------------------------------------------------------

CORE = Path(__file__).resolve().parents[3] / "operator" / "elasticquota" / "core"
#: Rule ids built at run time from a variable: the values they take.
COMPUTED_RULES = {
    "negative-max",
    "negative-min",
    "lending-limit",
    "borrowing-limit",
    "user-limits:user-after-wildcard",
}


def written_rules() -> set[str]:
    sources = [*sorted((CORE / "validation").glob("*.py")), CORE / "decisions" / "mutation.py"]
    text = "\n".join(path.read_text(encoding="utf-8") for path in sources)
    return set(re.findall(r'Violation\(\s*"([a-z:-]+)"', text)) | COMPUTED_RULES


def test_every_rule_has_a_case() -> None:
    covered = {case.rule for case in CASES}
    assert written_rules() - CHANGE_ONLY_RULES - covered == set()
    assert written_rules() >= CHANGE_ONLY_RULES  # no stale exemption


def test_the_json_names_the_rule_and_the_webhook_message(
    plan_json: Any, k8s: type[K8s], write: Any
) -> None:
    path = write(
        k8s.quota("p", {"cpu": "2"}, CPU, is_parent=True),
        k8s.quota("c", {"cpu": "4"}, CPU, parent="p"),
    )
    problems = [p for p in plan_json(path)["problems"] if p["name"] == "c"]
    (entry,) = [p for p in problems if p["source"] == "webhook"]
    assert entry["rule"] == "min-sum"
    assert entry["severity"] == "error"
    assert (entry["file"], entry["document"]) == (str(path), 1)
    assert entry["message"].startswith("checkMinQuotaSum all brothers' MinQuota > parent MinQuota")
    json.dumps(entry)  # plain JSON values


def test_of_quotas_listing_one_namespace_all_but_the_first_are_refused(k8s: type[K8s]) -> None:
    claims = [k8s.quota(name, max=CPU, namespaces=["shared"]) for name in ("c", "a", "b")]
    reported = set_refusals(claims, [])
    assert [(obj, rule) for obj, rule, _ in reported] == [
        ("ElasticQuota c/c", "namespaces-unique"),
        ("ElasticQuota b/b", "namespaces-unique"),
    ]
    assert all("already bound to quota a" in message for _, _, message in reported)


# -- the real handlers answer what webhook_verdict computes ----------------------------------------


def handlers_answer(case: Case) -> str:
    """The refusal's message from the operator's own admission handlers (``Admission``: the
    mutating then the validating webhook for a quota, validate-pod for a pod), over a memory
    holding the case's cluster; "" when admitted."""
    state = ControllerState.create(EngineSettings())
    for quota in case.cluster:
        state.on_quota(quota)
    state.mark_synced()
    admission = Admission(state, Settings(identity="test", metrics_port=0))
    try:
        if case.new["kind"] == "Pod":
            admission.validate_pod("CREATE", case.new, None)
            return ""
        patch = kopf.Patch()
        admission.mutate_quota(case.new, patch)
        mutated = json.loads(json.dumps(case.new))
        for key, value in (patch.get("metadata") or {}).items():
            mutated["metadata"].setdefault(key, {}).update(value)
        admission.validate_quota("CREATE", mutated, None)
    except kopf.AdmissionError as refusal:
        return str(refusal)
    return ""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_operators_handlers_refuse_with_these_messages(case: Case) -> None:
    assert handlers_answer(case) == "; ".join(v.message for v in webhook_verdict(case))
