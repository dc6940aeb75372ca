"""The dashboard, the alert rules and their docs agree with the metrics the operator exports.

* The Grafana dashboard (``files/dashboard.json`` of the chart) parses, has its fixed uid, unique
  and stable panel ids, a templated Prometheus data source everywhere, and queries only metric
  families of ``METRIC_NAMES`` (histograms through ``_bucket`` / ``_sum`` / ``_count``).
* The PrometheusRule template is read without helm (its Helm actions stripped, the escaped
  Prometheus templates kept): it parses, every rule is complete, every metric exists, every alert
  has a section in docs/alerts.md that its ``runbook_url`` points at, and no Prometheus template
  is left for Helm to evaluate.
* docs/metrics.md names every metric family, and the docs name no metric that does not exist.
* With helm (``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH;
  failing without it), both templates render, the rendered rule keeps ``{{ $labels.* }}`` and takes
  its ``for:`` from ``operator.revocationDelay``, and the ConfigMap carries the dashboard as is.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import pytest
import yaml
from repo_tools import find_helm

from elasticquota.controller.metrics import METRIC_NAMES

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "elastic-quota-operator"
DASHBOARD = CHART / "files" / "dashboard.json"
RULE_TEMPLATE = CHART / "templates" / "prometheusrule.yaml"
DASHBOARD_TEMPLATE = CHART / "templates" / "dashboard-configmap.yaml"
METRICS_DOC = ROOT / "docs" / "metrics.md"
ALERTS_DOC = ROOT / "docs" / "alerts.md"

METRIC = re.compile(r"\belastic_quota_[a-z0-9_]*[a-z0-9]")
#: What Prometheus appends to a histogram's base name (``METRIC_NAMES`` holds the base name).
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
#: Panel ids are part of links (``/d/elastic-quota?viewPanel=N``): keep them, never reuse one.
PANEL_IDS = {
    100: "row",
    1: "timeseries",
    2: "table",
    3: "timeseries",
    4: "timeseries",
    5: "timeseries",
    101: "row",
    6: "timeseries",
    7: "timeseries",
    8: "timeseries",
    102: "row",
    9: "timeseries",
    10: "timeseries",
    11: "timeseries",
    103: "row",
    12: "timeseries",
    13: "timeseries",
    104: "row",
    14: "stat",
    15: "stat",
    16: "stat",
    17: "stat",
    18: "stat",
    19: "stat",
    20: "timeseries",
    21: "timeseries",
    22: "timeseries",
    105: "row",
    23: "timeseries",
    24: "timeseries",
    25: "timeseries",
    26: "timeseries",
    27: "stat",
    28: "timeseries",
}
SEVERITIES = {"warning", "critical"}


def family(name: str) -> str:
    """The ``METRIC_NAMES`` entry an exposed series name belongs to (itself if none)."""
    if name in METRIC_NAMES:
        return name
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in METRIC_NAMES:
            return name.removesuffix(suffix)
    return name


def metric_names(text: str) -> set[str]:
    return set(METRIC.findall(text))


def unknown(names: set[str]) -> set[str]:
    return {name for name in names if family(name) not in METRIC_NAMES}


# -- the dashboard -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def all_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {variable["name"]: variable for variable in dashboard["templating"]["list"]}


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL text: panel targets and the variables' label_values queries."""
    queries = [
        target["expr"]
        for panel in all_panels(dashboard["panels"])
        for target in panel.get("targets", [])
    ]
    for variable in variables(dashboard).values():
        if variable["type"] == "query":
            query = variable["query"]
            queries.append(query["query"] if isinstance(query, dict) else query)
            queries.append(variable.get("definition", ""))
    return queries


def test_dashboard_identity(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "elastic-quota"
    assert dashboard["title"] == "Elastic Quota"
    assert 38 <= dashboard["schemaVersion"] <= 41
    assert dashboard["id"] is None  # provisioned dashboards get theirs from Grafana


def test_panel_ids_unique_and_stable(dashboard: dict[str, Any]) -> None:
    ids = [panel["id"] for panel in all_panels(dashboard["panels"])]
    assert len(ids) == len(set(ids))
    assert {panel["id"]: panel["type"] for panel in all_panels(dashboard["panels"])} == PANEL_IDS


def test_panels_fit_the_grid(dashboard: dict[str, Any]) -> None:
    for panel in all_panels(dashboard["panels"]):
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["h"] > 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["title"], panel["id"]


def test_uids_and_variable_names_unique(dashboard: dict[str, Any]) -> None:
    names = [variable["name"] for variable in dashboard["templating"]["list"]]
    assert len(names) == len(set(names))
    refs = [
        target["refId"]
        for panel in all_panels(dashboard["panels"])
        for target in panel.get("targets", [])
    ]
    assert refs, "no queries"
    for panel in all_panels(dashboard["panels"]):
        panel_refs = [target["refId"] for target in panel.get("targets", [])]
        assert len(panel_refs) == len(set(panel_refs)), panel["title"]


def test_datasource_is_a_prometheus_variable(dashboard: dict[str, Any]) -> None:
    source = variables(dashboard)["datasource"]
    assert source["type"] == "datasource"
    assert source["query"] == "prometheus"
    for panel in all_panels(dashboard["panels"]):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
    for variable in variables(dashboard).values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE, variable["name"]


def test_template_variables(dashboard: dict[str, Any]) -> None:
    found = variables(dashboard)
    assert {"datasource", "cluster", "tree", "quota", "resource"} <= set(found)
    assert found["quota"]["multi"] is True
    for name in ("cluster", "tree", "quota", "resource"):
        variable = found[name]
        assert variable["type"] == "query"
        # All must match the default tree, whose series have no tree label (tree=""), and the
        # series of a Prometheus that puts no cluster label on them.
        assert variable["includeAll"] and variable["allValue"] == ".*"
    for name in ("cluster", "quota", "resource"):
        assert "label_values(" in found[name]["definition"], name
    for panel in all_panels(dashboard["panels"]):
        if "repeat" in panel:
            assert panel["repeat"] in found, panel["title"]
        for target in panel.get("targets", []):
            for used in re.findall(r"\$(?!__)(\w+)", target["expr"]):
                assert used in found, (panel["title"], used)


def test_every_query_is_scoped_to_the_cluster_and_job(dashboard: dict[str, Any]) -> None:
    """A Prometheus (Thanos, Mimir) holding several clusters shows one at a time."""
    for query in dashboard_queries(dashboard):
        if query == variables(dashboard)["cluster"]["query"] or not query:
            continue
        for selector in re.findall(r"\belastic_quota_\w+(\{[^}]*\})?", query):
            assert 'cluster=~"$cluster"' in selector, query


def test_trees_are_shown_by_name(dashboard: dict[str, Any]) -> None:
    """The tree variable lists names (values: the ids the series carry), from the tree-info
    metric; panels that show trees join it and label them with tree_name, never the id."""
    tree = variables(dashboard)["tree"]
    assert "elastic_quota_tree_info" in tree["query"]
    pattern = tree["regex"].strip("/").replace("(?<", "(?P<")
    line = '{tree="1234",tree_name="gpu-pool"} 1 1700000000000'
    match = re.search(pattern, line)
    assert match and match["value"] == "1234" and match["text"] == "gpu-pool"
    for panel in all_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            assert "{{tree}}" not in target.get("legendFormat", ""), panel["title"]
            if "by (tree" in target["expr"] and panel["type"] != "row":
                shown = panel["type"] == "table" or "{{tree_name}}" in target["legendFormat"]
                if shown:
                    assert "group_left (tree_name)" in target["expr"], panel["title"]
    table = next(p for p in all_panels(dashboard["panels"]) if p["type"] == "table")
    organize = next(t for t in table["transformations"] if t["id"] == "organize")["options"]
    assert organize["excludeByName"]["tree"] is True
    assert organize["renameByName"]["tree_name"] == "tree"


def test_evictions_and_the_gate_wait_are_shown_by_reason_and_quota(
    dashboard: dict[str, Any],
) -> None:
    exprs = [t["expr"] for p in all_panels(dashboard["panels"]) for t in p.get("targets", [])]
    (evictions,) = [expr for expr in exprs if "elastic_quota_evictions_total" in expr]
    assert "by (quota, reason, result)" in evictions
    waits = [expr for expr in exprs if "elastic_quota_admission_wait_seconds_bucket" in expr]
    assert len(waits) == 3 and all("by (quota, le)" in expr for expr in waits)


def test_dashboard_queries_only_exported_metrics(dashboard: dict[str, Any]) -> None:
    names = set().union(*(metric_names(query) for query in dashboard_queries(dashboard)))
    assert names
    assert not unknown(names)


def test_dashboard_shows_every_metric(dashboard: dict[str, Any]) -> None:
    names = set().union(*(metric_names(query) for query in dashboard_queries(dashboard)))
    assert not METRIC_NAMES - {family(name) for name in names}


def test_histograms_are_read_through_their_buckets(dashboard: dict[str, Any]) -> None:
    for query in dashboard_queries(dashboard):
        for quantile in re.findall(r"histogram_quantile\([^,]+,(.*)", query):
            assert "_bucket{" in quantile, query


def test_unset_max_is_shown_as_unlimited(dashboard: dict[str, Any]) -> None:
    """No 0 is made up for an absent max: a max query is never defaulted with `or`."""
    for panel in all_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            if "elastic_quota_max" in target["expr"]:
                assert " or " not in target["expr"], panel["title"]
    table = next(p for p in all_panels(dashboard["panels"]) if p["type"] == "table")
    overrides = {
        override["matcher"]["options"]: override["properties"]
        for override in table["fieldConfig"]["overrides"]
    }
    assert {"id": "noValue", "value": "unlimited"} in overrides["max"]


# -- the alert rules -----------------------------------------------------------------------------

#: Helm raw strings, one line each: {{ `...` | quote }} and {{`...`}}.
RAW = re.compile(r"\{\{ `(.*?)` \| quote \}\}|\{\{`(.*?)`\}\}")
RUNBOOK = re.compile(r'\{\{ printf "%s#([a-z]+)" \$runbook \| quote \}\}')
HELM_COMMENT = re.compile(r"\{\{-? */\*.*?\*/ *-?\}\}", re.DOTALL)
HELM_ACTION_LINE = re.compile(r"^[ \t]*\{\{-?[^\n]*?-?\}\}[ \t]*\n", re.MULTILINE)
HELM_ACTION = re.compile(r"\{\{.*?\}\}")
PROMETHEUS_TEMPLATE = re.compile(r"\$labels|\$value")


def strip_helm(template: str) -> tuple[str, str]:
    """(the rule with Helm's actions stripped and its raw strings restored, the Helm-only text).

    Raw strings ({{`...`}}, Prometheus templates inside) are set aside first; then comments and
    lines that are only actions (if, with, include | nindent...) go; other actions become 0
    (numbers: the `for:` durations); the runbook links take the default base.
    """
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        quoted, raw = match.group(1), match.group(2)
        kept.append(json.dumps(quoted) if quoted is not None else raw)
        return f"@@{len(kept) - 1}@@"

    text = RAW.sub(keep, template)
    text = RUNBOOK.sub(lambda match: f'"docs/alerts.md#{match.group(1)}"', text)
    text = HELM_COMMENT.sub("", text)
    text = HELM_ACTION_LINE.sub("", text)
    helm_only = text
    text = HELM_ACTION.sub("0", text)
    text = re.sub(r"@@(\d+)@@", lambda match: kept[int(match.group(1))], text)
    return text, helm_only


@pytest.fixture(scope="module")
def rule_template() -> str:
    return RULE_TEMPLATE.read_text()


@pytest.fixture(scope="module")
def rules(rule_template: str) -> list[dict[str, Any]]:
    text, _ = strip_helm(rule_template)
    body = yaml.safe_load(text)
    assert body["apiVersion"] == "monitoring.coreos.com/v1"
    assert body["kind"] == "PrometheusRule"
    return [rule for group in body["spec"]["groups"] for rule in group["rules"]]


def alerts_doc_sections() -> set[str]:
    return set(re.findall(r"^## (\w+)\s*$", ALERTS_DOC.read_text(), re.MULTILINE))


def test_rule_template_is_gated_and_labelled(rule_template: str) -> None:
    assert rule_template.startswith("{{- if .Values.metrics.prometheusRule.enabled }}")
    assert rule_template.rstrip().endswith("{{- end }}")
    assert "with $rule.labels" in rule_template
    assert 'include "elastic-quota-operator.labels"' in rule_template


def test_prometheus_templates_are_escaped_from_helm(rule_template: str) -> None:
    _, helm_only = strip_helm(rule_template)
    assert not PROMETHEUS_TEMPLATE.search(helm_only)
    assert "{{ $labels.quota }}" in strip_helm(rule_template)[0]


def test_rules_are_complete(rules: list[dict[str, Any]]) -> None:
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names))
    for rule in rules:
        assert rule["expr"].strip(), rule["alert"]
        assert re.fullmatch(r"\d+[smh]", str(rule["for"])), rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], rule["alert"]
        assert annotations["runbook_url"] == f"docs/alerts.md#{rule['alert'].lower()}"


def test_quota_alerts_name_the_quota(rules: list[dict[str, Any]]) -> None:
    for rule in rules:
        grouped = re.findall(r"by \(([^)]*)\)", rule["expr"])
        labels = {label.strip() for group in grouped for label in group.split(",")}
        text = rule["annotations"]["summary"] + rule["annotations"]["description"]
        for label in labels & {"quota", "resource", "webhook", "verb", "code", "result"}:
            assert f"{{{{ $labels.{label} }}}}" in text, (rule["alert"], label)


def test_expected_alerts(rules: list[dict[str, Any]]) -> None:
    by_name = {rule["alert"]: rule for rule in rules}
    assert {
        "ElasticQuotaOverRuntime",
        "ElasticQuotaEvictionsFailing",
        "ElasticQuotaWebhookErrors",
        "ElasticQuotaOperatorDown",
        "ElasticQuotaOperatorNotReady",
        "ElasticQuotaNoLeader",
        "ElasticQuotaMultipleLeaders",
        "ElasticQuotaAPIErrors",
        "ElasticQuotaInvalidQuotas",
    } <= set(by_name)
    over = by_name["ElasticQuotaOverRuntime"]["expr"]
    assert "elastic_quota_used" in over and "> max by" in over and "elastic_quota_runtime" in over
    assert 'result!~"evicted|gone"' in by_name["ElasticQuotaEvictionsFailing"]["expr"]
    assert 'result="error"' in by_name["ElasticQuotaWebhookErrors"]["expr"]


def test_rules_use_only_exported_metrics(rule_template: str) -> None:
    names = metric_names(rule_template)
    assert names
    assert not unknown(names)


def test_every_alert_has_a_runbook_section(rules: list[dict[str, Any]]) -> None:
    sections = alerts_doc_sections()
    alerts = {rule["alert"] for rule in rules}
    assert alerts <= sections
    assert {section for section in sections if section.startswith("ElasticQuota")} == alerts


# -- the docs ------------------------------------------------------------------------------------


def test_metrics_doc_names_every_metric() -> None:
    text = METRICS_DOC.read_text()
    missing = {name for name in METRIC_NAMES if f"`{name}`" not in text}
    assert not missing


@pytest.mark.parametrize("doc", [METRICS_DOC, ALERTS_DOC], ids=lambda path: path.name)
def test_docs_name_only_exported_metrics(doc: Path) -> None:
    assert not unknown(metric_names(doc.read_text()))


# -- rendered by helm ----------------------------------------------------------------------------


HELM = find_helm()


P = ParamSpec("P")
R = TypeVar("R")


def needs_helm(test: Callable[P, R]) -> Callable[P, R]:
    """These tests fail, never skip, without helm: `make test` installs the pinned one first."""

    @functools.wraps(test)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if HELM is None:
            pytest.fail("helm not found ($HELM, .venv/tools, PATH): run `make helm`", pytrace=False)
        return test(*args, **kwargs)

    return checked


def helm_template(show_only: str, *settings: str) -> list[dict[str, Any]]:
    assert HELM is not None
    command = [HELM, "template", "eq", str(CHART), "--namespace", "eq-system"]
    command += ["--show-only", show_only]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    return [document for document in yaml.safe_load_all(result.stdout) if document]


@needs_helm
def test_helm_renders_the_rule() -> None:
    (rule,) = helm_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        "metrics.prometheusRule.labels.release=prometheus",
        "operator.revocationDelay=200",
    )
    assert rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["namespace"] == "eq-system"
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["metadata"]["labels"]["app.kubernetes.io/name"] == "elastic-quota-operator"
    rendered = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    template_alerts = set(re.findall(r"- alert: (\w+)", RULE_TEMPLATE.read_text()))
    assert set(rendered) == template_alerts
    over = rendered["ElasticQuotaOverRuntime"]
    assert over["for"] == "500s"  # the revocation delay plus the default margin of 300 s
    assert "{{ $labels.quota }}" in over["annotations"]["description"]
    for name, alert in rendered.items():
        assert alert["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOK}#{name.lower()}"


def chart_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return values


#: The chart's default runbook base (values.yaml), the same as the template's own fallback.
DEFAULT_RUNBOOK = chart_values()["metrics"]["prometheusRule"]["runbookBaseURL"]


def test_the_default_runbook_is_absolute_and_the_template_s_fallback(rule_template: str) -> None:
    assert re.fullmatch(
        r"https://github\.com/[\w.-]+/[\w.-]+/blob/main/docs/alerts\.md", DEFAULT_RUNBOOK
    )
    assert f'$runbook := "{DEFAULT_RUNBOOK}"' in rule_template
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    with open(ROOT / "pyproject.toml", "rb") as pyproject:
        homepage = tomllib.load(pyproject)["project"]["urls"]["Homepage"]
    assert f"{chart['home']}/blob/main/docs/alerts.md" == DEFAULT_RUNBOOK
    assert chart["home"] == homepage  # one home, declared in the package and the chart


@needs_helm
@pytest.mark.parametrize(
    ("setting", "base"),
    [
        (
            "https://wiki.example.org/ops/elastic-quota",
            "https://wiki.example.org/ops/elastic-quota",
        ),
        ("", DEFAULT_RUNBOOK),
    ],
    ids=["own", "empty"],
)
def test_the_runbook_base_is_a_chart_value(setting: str, base: str) -> None:
    (rule,) = helm_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        f"metrics.prometheusRule.runbookBaseURL={setting}",
    )
    for group in rule["spec"]["groups"]:
        for alert in group["rules"]:
            assert alert["annotations"]["runbook_url"] == f"{base}#{alert['alert'].lower()}"


@needs_helm
def test_a_relative_runbook_base_is_refused() -> None:
    assert HELM is not None
    command = [HELM, "template", "eq", str(CHART), "--set", "metrics.prometheusRule.enabled=true"]
    command += ["--set", "metrics.prometheusRule.runbookBaseURL=docs/alerts.md"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert "runbookBaseURL" in result.stderr


@needs_helm
def test_the_user_limit_alert_waits_the_chart_value() -> None:
    (rule,) = helm_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        "metrics.prometheusRule.userLimitHoldingSeconds=600",
    )
    rendered = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    holding = rendered["ElasticQuotaUserLimitHolding"]
    assert holding["for"] == "600s"
    assert "over 600s" in holding["annotations"]["description"]
    assert "{{ $labels.reason }}" in holding["annotations"]["summary"]


@needs_helm
def test_helm_leaves_the_over_use_alert_out_without_revocation() -> None:
    (rule,) = helm_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        "operator.revocation=false",
    )
    rendered = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert "ElasticQuotaOverRuntime" not in rendered
    assert "ElasticQuotaNoLeader" in rendered


@needs_helm
def test_helm_renders_the_dashboard_configmap() -> None:
    (config_map,) = helm_template(
        "templates/dashboard-configmap.yaml", "metrics.dashboard.enabled=true"
    )
    assert config_map["kind"] == "ConfigMap"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (content,) = config_map["data"].values()
    assert json.loads(content) == json.loads(DASHBOARD.read_text())


@needs_helm
def test_helm_renders_neither_when_disabled() -> None:
    assert HELM is not None
    command = [HELM, "template", "eq", str(CHART), "--set", "metrics.dashboard.enabled=false"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    documents = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert documents
    assert all(doc["kind"] != "PrometheusRule" for doc in documents)
    assert all(not doc["metadata"]["name"].endswith("-dashboard") for doc in documents)
