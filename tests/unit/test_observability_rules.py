"""The PrometheusRule template agrees with the metrics the operator exports and with its docs.

The template is read without helm (its Helm actions stripped, the escaped Prometheus templates
kept): it parses, every rule is complete, every metric exists, every alert has a section in
docs/alerts.md that its ``runbook_url`` points at, and no Prometheus template is left for Helm to
evaluate; its runbook fallback is the chart's default base, absolute and under the project's home.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

import pytest
import yaml
from observability_assets import (
    ALERTS_DOC,
    CHART,
    DEFAULT_RUNBOOK,
    RULE_TEMPLATE,
    metric_names,
    unknown,
)
from repo_tools import ROOT

SEVERITIES = {"warning", "critical"}


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
