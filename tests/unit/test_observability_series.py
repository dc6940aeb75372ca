"""Every PromQL text of the dashboard and the alert rules reads series the operator really exposes.

The name tests (``test_observability_dashboard``, ``_rules``) check family names against
``METRIC_NAMES``, which accepts a histogram's bare base name, a gauge with a ``_count`` suffix or a
counter under ``rate()`` alike. Here the reference is the exposition itself, parsed, of an operator
whose every family has series (a solved tree with user limits, a gated pod, a reader, each counter
and histogram fed once): each selector names an exposed series (``_total``, ``_bucket``...), each
label matcher and ``by``/``on``/``group_left`` label is one that series carries (or a label the
scrape adds), ``rate``/``increase`` read counters or histogram series only, and
``histogram_quantile`` reads ``_bucket`` series grouped by ``le``.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
import yaml
from observability_assets import DASHBOARD, METRICS_DOC, RULE_TEMPLATE, all_panels, family
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from quota_bodies import quota_body
from test_observability_rules import strip_helm

from elasticquota.controller.metrics import METRIC_NAMES, Metrics
from elasticquota.controller.metrics.overuse import OverUseTimers
from elasticquota.controller.solving import solve_tree_off_loop
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.core.solve.engine import EngineSettings
from elasticquota.kube.readerparts import ReaderHealth

#: Labels the scrape adds (the chart's monitors, a Prometheus' external labels).
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "cluster"}
#: The tree-info join's label, present on every series it joins.
JOINED = {"tree_name"}
SELECTOR = re.compile(r"\b(elastic_quota_[a-z0-9_]*[a-z0-9])\s*(\{[^}]*\})?")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
RANGE_FUNCTION = re.compile(r"\b(rate|irate|increase)\s*\(")
QUANTILE = re.compile(r"\bhistogram_quantile\s*\(")


def pod(name: str, *, node: str = "", gated: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if node:
        spec["nodeName"] = node
    if gated:
        spec["schedulingGates"] = [{"name": keys.ADMISSION_GATE}]
    info = json.dumps({"user": "sue", "groups": ["dev"]})
    metadata = {"name": name, "namespace": "team", "uid": f"uid-{name}",
                "labels": {keys.POD_LABEL_QUOTA: "team-a"},
                "annotations": {keys.ANNO_USER_INFO: info},
                "creationTimestamp": "2024-01-01T00:00:00Z"}  # fmt: skip
    phase = "Running" if node else "Pending"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": {"phase": phase}}  # fmt: skip


async def fed_metrics() -> Metrics:
    """An operator's metrics with series in every family."""
    state = ControllerState.create(EngineSettings())
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}  # fmt: skip
    state.on_node(node)
    limits = '- users: ["sue"]\n  maxresources: {cpu: 3}\n  maxapplications: 2\n'
    limits += '- groups: ["dev"]\n  maxresources: {cpu: 4}\n  maxapplications: 3\n'
    state.on_quota(quota_body("dept", min={"cpu": "2"}, max={"cpu": "8"}, is_parent=True))
    annotations = {
        keys.ANNO_USER_LIMITS: limits,
        keys.ANNO_LENDING_LIMIT: '{"cpu": "1"}',
        keys.ANNO_BORROWING_LIMIT: '{"cpu": "2"}',
    }
    state.on_quota(
        quota_body(
            "team-a", min={"cpu": "1"}, max={"cpu": "4"}, parent="dept", annotations=annotations
        )
    )
    state.on_pod(pod("running", node="n1"))
    state.on_pod(pod("waiting", gated=True))
    state.readers["pods"] = ReaderHealth(connected=True, relists=1)
    state.mark_synced()
    state.gated = {("team-a", "quota"): 1}
    leading = asyncio.Event()
    leading.set()
    metrics = Metrics()
    metrics.watch(state, leading)
    await solve_tree_off_loop(state.engine, "", metrics)
    state.results[""] = state.engine.published("")
    metrics.eviction("team-a", "over-use", "evicted")
    metrics.admitted("team-a")
    metrics.denied("team-a")
    metrics.admission_waited("", "team-a", 3.0)
    metrics.api_error("patch", "500")
    metrics.webhook_request("validate-pod", "allowed")
    metrics.lease_renew_failed("timeout")
    metrics.reconciled(0.1)
    metrics.pod_event_written(0.2)
    metrics.loop_lag(0.01)
    metrics.over_use_timers(OverUseTimers({"team-a": 1_700_000_000.0}, 60.0))
    return metrics


#: Exposed series name -> (its family's type, the labels its samples carry).
Series = dict[str, tuple[str, set[str]]]


@pytest.fixture(scope="module")
def exposition() -> str:
    return generate_latest(asyncio.run(fed_metrics()).registry).decode()


@pytest.fixture(scope="module")
def series(exposition: str) -> Series:
    found: Series = {}
    for exposed in text_string_to_metric_families(exposition):
        for sample in exposed.samples:
            _, labels = found.setdefault(sample.name, (exposed.type, set()))
            labels.update(sample.labels)
    return found


def argument(text: str, opening: int) -> str:
    """The text inside the parenthesis at ``opening``."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[opening + 1 : index]
    raise ValueError(f"unbalanced: {text}")


def problems(expr: str, series: Series) -> list[str]:
    """What in ``expr`` reads no exposed series, label or type."""
    found, labels = [], set(TARGET_LABELS | JOINED)
    for name, selector in SELECTOR.findall(expr):
        if name not in series:
            found.append(f"{name} is not exposed")
            continue
        labels |= series[name][1]
        for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", selector):
            if label not in series[name][1] | TARGET_LABELS:
                found.append(f"{name} has no label {label}")
    for grouped in GROUPING.findall(expr):
        found += [
            f"no series has {name}" for name in re.findall(r"\w+", grouped) if name not in labels
        ]
    for match in RANGE_FUNCTION.finditer(expr):
        for name, _ in SELECTOR.findall(argument(expr, match.end() - 1)):
            if name in series and series[name][0] not in ("counter", "histogram"):
                found.append(f"{match.group(1)}() of the {series[name][0]} {name}")
    for match in QUANTILE.finditer(expr):
        inner = argument(expr, match.end() - 1)
        read = [name for name, _ in SELECTOR.findall(inner)]
        found += [f"quantile of {name}" for name in read if not name.endswith("_bucket")]
        if not re.search(r"\bby \([^)]*\ble\b", inner):
            found.append("quantile not grouped by le")
    return found


def dashboard_exprs() -> dict[str, str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = {
        f"panel {panel['id']} {target['refId']}": target["expr"]
        for panel in all_panels(dashboard["panels"])
        for target in panel.get("targets", [])
    }
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            exprs[f"variable {variable['name']}"] = variable["query"]
    return exprs


def rule_exprs() -> dict[str, str]:
    text, _ = strip_helm(RULE_TEMPLATE.read_text())
    groups = yaml.safe_load(text)["spec"]["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"]}


def test_every_family_has_series_to_check_against(series: Series) -> None:
    assert {family(name) for name in series} >= METRIC_NAMES


@pytest.mark.parametrize("exprs", [dashboard_exprs, rule_exprs], ids=["dashboard", "rules"])
def test_queries_read_exposed_series_labels_and_types(exprs: Any, series: Series) -> None:
    texts = exprs()
    assert texts
    wrong = {where: found for where, expr in texts.items() if (found := problems(expr, series))}
    assert wrong == {}


def test_the_admission_wait_series_per_quota_are_as_many_as_the_doc_says(exposition: str) -> None:
    """Every series of one quota's admission-wait histogram, ``_created`` included
    (prometheus_client writes one per counter and histogram child in the text format)."""
    wait = re.compile(r'^elastic_quota_admission_wait_seconds_\w+\{[^}]*quota="team-a"', re.M)
    count = len(wait.findall(exposition))
    assert f"series ({count} per quota:" in METRICS_DOC.read_text()
