"""What the tests of the observability assets (the chart's Grafana dashboard and PrometheusRule,
docs/metrics.md and docs/alerts.md) share: where the assets are, the metric names a text uses and
which of them the operator does not export, the dashboard's panels, and the chart's default
runbook base.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from chart_render import CHART
from repo_tools import ROOT

from elasticquota.controller.metrics import METRIC_NAMES

DASHBOARD = CHART / "files" / "dashboard.json"
RULE_TEMPLATE = CHART / "templates" / "prometheusrule.yaml"
DASHBOARD_TEMPLATE = CHART / "templates" / "dashboard-configmap.yaml"
METRICS_DOC = ROOT / "docs" / "metrics.md"
ALERTS_DOC = ROOT / "docs" / "alerts.md"

METRIC = re.compile(r"\belastic_quota_[a-z0-9_]*[a-z0-9]")
#: What Prometheus appends to a histogram's base name (``METRIC_NAMES`` holds the base name).
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


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


def all_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every panel of a dashboard's ``panels``, those inside collapsed rows too."""
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def chart_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return values


#: The chart's default runbook base (values.yaml), the same as the template's own fallback.
DEFAULT_RUNBOOK = chart_values()["metrics"]["prometheusRule"]["runbookBaseURL"]
