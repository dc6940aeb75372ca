"""The Grafana dashboard agrees with the metrics the operator exports.

The dashboard (``files/dashboard.json`` of the chart) parses, has its fixed uid, unique and stable
panel ids, a templated Prometheus data source everywhere, and queries only metric families of
``METRIC_NAMES`` (histograms through ``_bucket`` / ``_sum`` / ``_count``), every one of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from observability_assets import DASHBOARD, all_panels, family, metric_names, unknown

from elasticquota.controller.metrics import METRIC_NAMES

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
    29: "timeseries",
}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


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


SECONDS = re.compile(r"\belastic_quota_[a-z0-9_]*_seconds(_bucket)?\b")


def target_unit(panel: dict[str, Any], ref_id: str) -> str | None:
    """The unit a target's series are shown in: its refId's override, else the panel's."""
    unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
    for override in panel.get("fieldConfig", {}).get("overrides", []):
        if override["matcher"] == {"id": "byFrameRefID", "options": ref_id}:
            for prop in override["properties"]:
                unit = prop["value"] if prop["id"] == "unit" else unit
    return unit if isinstance(unit, str) else None


def test_only_durations_are_shown_in_seconds(dashboard: dict[str, Any]) -> None:
    """A series is shown in seconds exactly when it is a duration (a ``_seconds`` family): a 0/1
    gauge or a count of relists in a panel of durations gets a unit of its own."""
    wrong = [
        (panel["title"], target["refId"], target_unit(panel, target["refId"]))
        for panel in all_panels(dashboard["panels"])
        if panel["type"] == "timeseries"
        for target in panel.get("targets", [])
        if (target_unit(panel, target["refId"]) == "s") != bool(SECONDS.search(target["expr"]))
    ]
    assert wrong == []
