"""The dashboard and alert rule templates as helm renders them.

With helm (``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing
without it), both templates render, the rendered rule keeps ``{{ $labels.* }}``, takes its
``for:`` from ``operator.revocationDelay`` and its runbook links from a chart value (an absolute
base, the default one when left empty), and the ConfigMap carries the dashboard as is.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from chart_render import TemplateError, helm_template
from observability_assets import DASHBOARD, DEFAULT_RUNBOOK, RULE_TEMPLATE


def one_template(show_only: str, *settings: str) -> list[dict[str, Any]]:
    """One template of the chart, with these ``--set`` values."""
    return helm_template("--show-only", show_only, *(f"--set={setting}" for setting in settings))


def test_helm_renders_the_rule() -> None:
    (rule,) = one_template(
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
    (rule,) = one_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        f"metrics.prometheusRule.runbookBaseURL={setting}",
    )
    for group in rule["spec"]["groups"]:
        for alert in group["rules"]:
            assert alert["annotations"]["runbook_url"] == f"{base}#{alert['alert'].lower()}"


def test_a_relative_runbook_base_is_refused() -> None:
    with pytest.raises(TemplateError) as refused:
        one_template(
            "templates/prometheusrule.yaml",
            "metrics.prometheusRule.enabled=true",
            "metrics.prometheusRule.runbookBaseURL=docs/alerts.md",
        )
    assert "runbookBaseURL" in refused.value.stderr


def test_the_user_limit_alert_waits_the_chart_value() -> None:
    (rule,) = one_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        "metrics.prometheusRule.userLimitHoldingSeconds=600",
    )
    rendered = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    holding = rendered["ElasticQuotaUserLimitHolding"]
    assert holding["for"] == "600s"
    assert "over 600s" in holding["annotations"]["description"]
    assert "{{ $labels.reason }}" in holding["annotations"]["summary"]


def test_helm_leaves_the_over_use_alert_out_without_revocation() -> None:
    (rule,) = one_template(
        "templates/prometheusrule.yaml",
        "metrics.prometheusRule.enabled=true",
        "operator.revocation=false",
    )
    rendered = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert "ElasticQuotaOverRuntime" not in rendered
    assert "ElasticQuotaNoLeader" in rendered


def test_helm_renders_the_dashboard_configmap() -> None:
    (config_map,) = one_template(
        "templates/dashboard-configmap.yaml", "metrics.dashboard.enabled=true"
    )
    assert config_map["kind"] == "ConfigMap"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    (content,) = config_map["data"].values()
    assert json.loads(content) == json.loads(DASHBOARD.read_text())


def test_helm_renders_neither_when_disabled() -> None:
    documents = helm_template("--set", "metrics.dashboard.enabled=false")
    assert documents
    assert all(doc["kind"] != "PrometheusRule" for doc in documents)
    assert all(not doc["metadata"]["name"].endswith("-dashboard") for doc in documents)
