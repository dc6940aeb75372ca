"""The chart's alert rules and the dashboard's queries, checked by Prometheus' own ``promtool``.

* The PrometheusRule rendered by helm (``metrics.prometheusRule.enabled=true``, chart defaults
  otherwise) has its ``spec`` written as a Prometheus rule file: ``promtool check rules`` parses
  every expression and template, and ``promtool test rules`` runs the committed unit tests
  ``manifests/tools/alerts-test.yaml`` against it: every alert fires when it should, with its
  labels and annotation texts, and stays quiet when it should not.
* Every PromQL text of ``files/dashboard.json`` (panel targets, and the selectors of the template
  variables' ``label_values(...)``), with the Grafana variables replaced by plausible values, is
  checked as a recording rule; then evaluated by ``promtool test rules`` on synthetic series of
  every metric: each query returns data, and the borrowed / lent panels return the documented
  figures (a quota without a min borrows all it uses, one without used series lends its min).

promtool comes from ``$PROMTOOL``, ``.venv/tools/bin`` (``make promtool``) or PATH; helm from
``$HELM``, ``.venv/tools`` (``make helm``) or PATH. Without either these tests fail, never skip:
``make test`` installs both first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from observability_assets import CHART, DASHBOARD, all_panels
from repo_tools import ROOT

ALERTS_TEST = ROOT / "manifests" / "tools" / "alerts-test.yaml"
#: The name alerts-test.yaml loads (its rule_files), written next to a copy of it.
RULES_NAME = "elastic-quota.rules.yaml"
TIMEOUT = 120

#: Grafana's variables as a user would set them: the regex formatting of multi-value variables
#: (``(a|b)``), All as the chart's allValue ``.*`` (it must match the default tree's series,
#: which have no ``tree`` label), and a typical ``$__rate_interval``.
VARIABLES = {
    "cluster": ".*",
    "job": "eq",
    "tree": ".*",
    "quota": "(team-a|team-b|team-c)",
    "resource": "cpu",
    "user": ".*",
    "group": ".*",
    "__rate_interval": "2m",
    "__interval": "30s",
    "__range": "1h",
}
LABEL_VALUES = re.compile(r"^\s*label_values\((?P<selector>.*),\s*(?P<label>\w+)\s*\)\s*$")
#: Grafana's ``query_result(expr)`` (the tree variable: ids as values, names as texts).
QUERY_RESULT = re.compile(r"^\s*query_result\((?P<selector>.*)\)\s*$")


def find_tool(variable: str, pinned: Path, name: str) -> str | None:
    for candidate in (os.environ.get(variable), str(pinned) if pinned.exists() else None):
        if candidate:
            return candidate
    return shutil.which(name)


PROMTOOL = find_tool("PROMTOOL", ROOT / ".venv" / "tools" / "bin" / "promtool", "promtool")
HELM = find_tool("HELM", ROOT / ".venv" / "tools" / "node_modules" / ".bin" / "helm", "helm")


def promtool() -> str:
    if PROMTOOL is None:
        pytest.fail(
            "promtool not found ($PROMTOOL, .venv/tools/bin, PATH): run `make promtool`",
            pytrace=False,
        )
    return PROMTOOL


def run_promtool(*args: str, cwd: Path) -> str:
    """Run promtool; fail the test with its whole output unless it succeeds."""
    result = subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    output = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"promtool {' '.join(args)} (exit {result.returncode}):\n{output}")
    return output


# -- the alert rules -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rule_spec() -> dict[str, Any]:
    """The ``spec`` of the PrometheusRule helm renders with the chart's defaults."""
    if HELM is None:
        pytest.fail("helm not found ($HELM, .venv/tools, PATH): run `make helm`", pytrace=False)
    command = [HELM, "template", "eq", str(CHART), "--namespace", "eq-system"]
    command += ["--show-only", "templates/prometheusrule.yaml"]
    command += ["--set", "metrics.prometheusRule.enabled=true"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert result.returncode == 0, result.stderr
    (rule,) = [document for document in yaml.safe_load_all(result.stdout) if document]
    assert rule["kind"] == "PrometheusRule"
    spec: dict[str, Any] = rule["spec"]
    return spec


@pytest.fixture
def rules_dir(tmp_path: Path, rule_spec: dict[str, Any]) -> Path:
    """A directory with the rendered rule file and a copy of alerts-test.yaml."""
    (tmp_path / RULES_NAME).write_text(yaml.safe_dump(rule_spec, sort_keys=False))
    shutil.copyfile(ALERTS_TEST, tmp_path / ALERTS_TEST.name)
    return tmp_path


def alert_names(rule_spec: dict[str, Any]) -> set[str]:
    return {rule["alert"] for group in rule_spec["groups"] for rule in group["rules"]}


def test_promtool_checks_the_rules(rules_dir: Path, rule_spec: dict[str, Any]) -> None:
    output = run_promtool("check", "rules", RULES_NAME, cwd=rules_dir)
    print(output)
    assert f"SUCCESS: {len(alert_names(rule_spec))} rules found" in output


def test_promtool_unit_tests_of_the_alerts(rules_dir: Path) -> None:
    output = run_promtool("test", "rules", ALERTS_TEST.name, cwd=rules_dir)
    print(output)
    assert "SUCCESS" in output


def test_every_alert_is_tested_firing_and_quiet(rule_spec: dict[str, Any]) -> None:
    """Each alert has an eval_time where it fires and one where it must not (yet)."""
    tests = yaml.safe_load(ALERTS_TEST.read_text())
    assert tests["rule_files"] == [RULES_NAME]
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in tests["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
            for alert in check.get("exp_alerts") or []:
                assert set(alert["exp_annotations"]) == {"summary", "description", "runbook_url"}
    names = alert_names(rule_spec)
    assert names
    assert firing == names, "alerts without a firing case / unknown alerts tested"
    assert quiet == names, "alerts without a quiet case / unknown alerts tested"


# -- the dashboard -------------------------------------------------------------------------------


def substitute(query: str) -> str:
    """The query with Grafana's variables replaced (``$name`` and ``${name}``)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in VARIABLES, f"no test value for ${name} in {query}"
        return VARIABLES[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, query)


def dashboard_queries() -> dict[str, str]:
    """``panel-<id>-<refId>`` / ``variable-<name>`` -> the PromQL, variables substituted."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries: dict[str, str] = {}
    for panel in all_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            queries[f"panel-{panel['id']}-{target['refId']}"] = substitute(target["expr"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]
        text = query["query"] if isinstance(query, dict) else query
        match = LABEL_VALUES.match(text) or QUERY_RESULT.match(text)
        assert match, f"variable {variable['name']}: not label_values(selector, label): {text}"
        queries[f"variable-{variable['name']}"] = substitute(match["selector"])
    return queries


def record_name(key: str) -> str:
    return "dashboard:" + key.replace("-", "_")


def test_dashboard_queries_pass_promtool_check(tmp_path: Path) -> None:
    queries = dashboard_queries()
    rules = [{"record": record_name(key), "expr": expr} for key, expr in queries.items()]
    path = tmp_path / "dashboard.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    output = run_promtool("check", "rules", path.name, cwd=tmp_path)
    print(output)
    assert f"SUCCESS: {len(queries)} rules found" in output


#: Synthetic series of every metric family, sampled every minute for 30 minutes, labelled as the
#: chart's monitors scrape them. team-a: default tree, every figure; team-b: tree pool-a, no min
#: and no max; team-c: a min (scaled down to an effective min of 5) and no used series; the
#: root's figures are the tree's totals.
QUOTAS: dict[str, dict[str, Any]] = {
    "team-a": {
        "labels": {"parent": "koordinator-root-quota"},
        "figures": {
            "min": 4,
            "effective_min": 4,
            "max": 10,
            "request": 8,
            "limited_request": 8,
            "used": 6,
            "runtime": 7,
            "lending_limit": 2,
            "borrowing_limit": 3,
        },
    },
    "team-b": {
        "labels": {"parent": "koordinator-root-quota", "tree": "pool-a"},
        "figures": {"request": 3, "limited_request": 3, "used": 3, "runtime": 5},
    },
    "team-c": {
        "labels": {"parent": "koordinator-root-quota"},
        "figures": {"min": 6, "effective_min": 5, "request": 0, "limited_request": 6, "runtime": 5},
    },
    "koordinator-root-quota": {
        "labels": {},
        "figures": {"request": 11, "limited_request": 16, "used": 9, "runtime": 20},
    },
}
#: tree id -> name (elastic_quota_tree_info): the default tree (no tree label) and pool-a.
TREE_NAMES = {"": "default", "pool-a": "gpu-pool"}
TARGET = {"job": "eq", "instance": "10.0.0.1:8080", "namespace": "eq-system"}
EVAL_TIME = "30m"
SAMPLES = "x30"


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    text = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return {"series": f"{name}{{{text}}}", "values": values}


def synthetic_series() -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for quota, spec in QUOTAS.items():
        labels = {
            **TARGET,
            "namespace": "quotas",
            "quota": quota,
            "resource": "cpu",
            **spec["labels"],
        }
        for figure, value in spec["figures"].items():
            found.append(series(f"elastic_quota_{figure}", labels, f"{value}{SAMPLES}"))
    for name, value in (
        ("leader", 1),
        ("ready", 1),
        ("invalid_quotas", 0),
        ("event_loop_max_lag_seconds", 0.03),
    ):
        found.append(series(f"elastic_quota_{name}", TARGET, f"{value}{SAMPLES}"))
    found.append(series("elastic_quota_info", {**TARGET, "version": "0.1.0"}, f"1{SAMPLES}"))
    for tree, name in TREE_NAMES.items():
        info = {**TARGET, "tree_name": name, **({"tree": tree} if tree else {})}
        found.append(series("elastic_quota_tree_info", info, f"1{SAMPLES}"))
    pods = {**TARGET, "kind": "pods"}
    for name, value in (("watch_connected", 1), ("watch_down_seconds", 0)):
        found.append(series(f"elastic_quota_{name}", pods, f"{value}{SAMPLES}"))
    for reason, count in (("quota", 2), ("user-limit", 1)):
        held = {**TARGET, "quota": "team-a", "reason": reason}
        found.append(series("elastic_quota_gated_pods", held, f"{count}{SAMPLES}"))
    over = {**TARGET, "namespace": "quotas", "quota": "team-a", "parent": "koordinator-root-quota"}
    found.append(series("elastic_quota_over_used_since_timestamp_seconds", over, f"60{SAMPLES}"))
    found.append(series("elastic_quota_revocation_min_runtime_seconds", over, f"600{SAMPLES}"))
    found.extend(subject_series())
    counters = {
        "elastic_quota_evictions_total": {
            "quota": "team-a",
            "reason": "over-use",
            "result": "evicted",
        },
        "elastic_quota_admissions_total": {"quota": "team-a", "result": "admitted"},
        "elastic_quota_api_errors_total": {"verb": "patch", "code": "500"},
        "elastic_quota_webhook_requests_total": {"webhook": "validate-pod", "result": "allowed"},
        "elastic_quota_watch_relists_total": {"kind": "pods"},
        "elastic_quota_lease_renew_failures_total": {"reason": "timeout"},
    }
    for name, labels in counters.items():
        found.append(series(name, {**TARGET, **labels}, f"0+1{SAMPLES}"))
    histograms = {
        "elastic_quota_solve_seconds": {"tree": "pool-a"},
        "elastic_quota_reconcile_seconds": {},
        "elastic_quota_pod_event_to_write_seconds": {},
        "elastic_quota_event_loop_lag_seconds": {},
        "elastic_quota_admission_wait_seconds": {"tree": "pool-a", "quota": "team-b"},
    }
    for name, labels in histograms.items():
        for rank, bound in enumerate(("0.001", "0.01", "0.1", "+Inf"), start=1):
            bucket = {**TARGET, **labels, "le": bound}
            found.append(series(f"{name}_bucket", bucket, f"0+{rank}{SAMPLES}"))
        found.append(series(f"{name}_count", {**TARGET, **labels}, f"0+4{SAMPLES}"))
        found.append(series(f"{name}_sum", {**TARGET, **labels}, f"0+0.05{SAMPLES}"))
    return found


def subject_series() -> list[dict[str, str]]:
    """sue and the group dev at team-a, with limits; users folded into (other)."""
    found: list[dict[str, str]] = []
    for kind, name in (("user", "sue"), ("group", "dev")):
        at = {**TARGET, "quota": "team-a", kind: name}
        for figure, value in (("used", 2), ("limit", 4)):
            labels = {**at, "resource": "cpu"}
            found.append(series(f"elastic_quota_{kind}_{figure}", labels, f"{value}{SAMPLES}"))
        for figure, value in (("applications", 1), ("max_applications", 3)):
            found.append(series(f"elastic_quota_{kind}_{figure}", at, f"{value}{SAMPLES}"))
    folded = {**TARGET, "kind": "user"}
    found.append(series("elastic_quota_user_subjects_folded", folded, f"5{SAMPLES}"))
    return found


def quota_labels(quota: str, named: bool = False) -> str:
    """The labels of a quota's result; ``named``: with its tree's name (joined from tree info)."""
    labels = {"namespace": "quotas", "quota": quota, "resource": "cpu", **QUOTAS[quota]["labels"]}
    if named:
        labels["tree_name"] = TREE_NAMES[labels.get("tree", "")]
    return "{" + ", ".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"


def test_dashboard_queries_return_data(tmp_path: Path) -> None:
    queries = dashboard_queries()
    empty = [
        {"alert": "DashboardQueryEmpty", "expr": f"absent({expr})", "labels": {"query": key}}
        for key, expr in queries.items()
    ]
    (tmp_path / "dashboard.rules.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": empty}]})
    )
    borrowed = {"team-a": 2, "team-b": 3}  # used - effective min; no min: all it uses
    lent = {"team-a": 0, "team-c": 5}  # effective min - used, at least 0; no used: its min
    expected = {"panel-3-A": borrowed, "panel-4-A": lent, "panel-2-H": borrowed, "panel-2-I": lent}
    expr_tests = [
        {
            "expr": queries[key],
            "eval_time": EVAL_TIME,
            "exp_samples": [
                {"labels": quota_labels(quota, named=key.startswith("panel-2-")), "value": value}
                for quota, value in sorted(figures.items())
            ],
        }
        for key, figures in expected.items()
    ]
    tests = {
        "rule_files": ["dashboard.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "every dashboard query returns data; borrowed and lent figures",
                "interval": "1m",
                "input_series": synthetic_series(),
                "alert_rule_test": [
                    {"eval_time": EVAL_TIME, "alertname": "DashboardQueryEmpty", "exp_alerts": []}
                ],
                "promql_expr_test": expr_tests,
            }
        ],
    }
    (tmp_path / "dashboard-test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    output = run_promtool("test", "rules", "dashboard-test.yaml", cwd=tmp_path)
    print(output)
    assert "SUCCESS" in output
