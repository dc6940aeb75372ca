"""``/metrics`` writes the per-quota figures itself: the same exposition as prometheus_client's.

``Metrics.exposition`` (what the handler serves) is compared with ``generate_latest`` of the whole
registry (prometheus_client's own encoding of every family, figures included), parsed by
prometheus_client's parsers, in the text format and in OpenMetrics (whose parser is strict: one
block per family, ``# EOF`` last).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest
from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text
from prometheus_client.registry import Collector

from elasticquota.controller.metrics import Metrics
from elasticquota.controller.metrics.exposition import LINES_AT_ONCE, in_chunks, label_value
from elasticquota.controller.metrics.names import QUOTA_FIGURES
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import Bodies

OPENMETRICS_ACCEPT = "application/openmetrics-text; version=1.0.0"
Families = dict[str, tuple[str, str, list[tuple[str, tuple[tuple[str, str], ...], float]]]]


def served(metrics: Metrics, accept: str) -> tuple[bytes, str]:
    """What ``/metrics`` sends, its chunks put together, and its content type."""
    chunks, content_type = metrics.exposition(accept)
    return b"".join(chunks), content_type


def families(parsed: Iterable[Metric]) -> Families:
    """Each family by name: its type, help and samples (in a stable order)."""
    return {
        family.name: (
            family.type,
            family.documentation,
            sorted((s.name, tuple(sorted(s.labels.items())), s.value) for s in family.samples),
        )
        for family in parsed
    }


@pytest.fixture
def solved(state: ControllerState, k8s: Bodies) -> ControllerState:
    """Two trees (the default one and a profile's), cpu, memory and a GPU, the system quota
    with its "no limit" sentinels, a quota with lending and borrowing limits, a running pod;
    every tree solved."""
    state.on_node(k8s.node("n1", allocatable={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}))
    reserved_max = {"cpu": str(keys.RESERVED_GROUP_MAX), "memory": str(keys.RESERVED_GROUP_MAX)}
    root = {keys.LABEL_TREE_ID: "1234", keys.LABEL_IS_ROOT: "true", keys.LABEL_PROFILE: "gpus"}
    bodies = [
        k8s.quota("dept", min={"cpu": "4"}, max={"cpu": "8", "memory": "16Gi"}, is_parent=True),
        k8s.quota("team-a", min={"cpu": "1500m", "memory": "1Gi"}, max={"cpu": "8"},
                  parent="dept", annotations={keys.ANNO_LENDING_LIMIT: '{"cpu": "1"}',
                                              keys.ANNO_BORROWING_LIMIT: '{"memory": "2Gi"}'}),
        k8s.quota("team-b", "other-ns", min={"cpu": "500m"}, max={"cpu": "8", "memory": "8Gi"},
                  parent="dept"),
        k8s.quota(keys.SYSTEM_QUOTA, "koordinator-system", max=reserved_max,
                  parent=keys.ROOT_QUOTA),
        k8s.quota("gpu-root", min={"nvidia.com/gpu": "4"}, max={"nvidia.com/gpu": "4"},
                  is_parent=True, labels=root),
        k8s.quota("gpu-team", max={"nvidia.com/gpu": "2", "cpu": "3"}, parent="gpu-root",
                  labels={keys.LABEL_TREE_ID: "1234"}),
    ]  # fmt: skip
    for body in bodies:
        state.on_quota(body)
    requests = {"cpu": "1250m", "memory": "3Gi"}
    state.on_pod(k8s.pod("p", quota="team-a", requests=requests, node="n1", phase="Running"))
    state.mark_synced()
    for tree in state.engine.tree_ids():
        state.results[tree] = state.engine.solve_tree(tree)
    return state


def test_the_text_format_is_prometheus_clients_own(
    solved: ControllerState, metrics: Metrics
) -> None:
    body, content_type = served(metrics, "")
    assert content_type.startswith("text/plain; version=0.0.4")
    ours = families(parse_text(body.decode()))
    assert ours == families(parse_text(generate_latest(metrics.registry).decode()))
    assert set(QUOTA_FIGURES) <= set(ours)
    runtimes = ours["elastic_quota_runtime"][2]
    assert {dict(labels)["tree"] for _, labels, _ in runtimes} == {"", "1234"}
    assert {dict(labels)["unit"] for _, labels, _ in runtimes} == {"cores", "bytes", "units"}


def test_openmetrics_is_prometheus_clients_own(solved: ControllerState, metrics: Metrics) -> None:
    body, content_type = served(metrics, OPENMETRICS_ACCEPT)
    assert content_type.startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n") and body.count(b"# EOF") == 1
    expected = openmetrics.generate_latest(metrics.registry).decode()
    assert families(parse_openmetrics(body.decode())) == families(parse_openmetrics(expected))


def test_the_sample_lines_are_written_as_prometheus_client_writes_them(
    solved: ControllerState, metrics: Metrics
) -> None:
    """Not only the same values: the same lines (label order, float text), figure by figure."""
    ours = served(metrics, "")[0].decode().splitlines()
    theirs = generate_latest(metrics.registry).decode().splitlines()
    for name in QUOTA_FIGURES:
        mine = [line for line in ours if line.startswith((f"{name}{{", f"# HELP {name} "))]
        assert mine == [
            line for line in theirs if line.startswith((f"{name}{{", f"# HELP {name} "))
        ]
        assert len(mine) > 1


def test_a_standby_writes_the_families_without_series(
    solved: ControllerState, metrics: Metrics, leading: asyncio.Event
) -> None:
    leading.clear()
    text = served(metrics, "")[0].decode()
    assert "# TYPE elastic_quota_runtime gauge" in text
    assert "elastic_quota_runtime{" not in text


@pytest.mark.parametrize("accept", ["", OPENMETRICS_ACCEPT])
def test_metrics_that_watch_no_state_serve_their_own_families_only(accept: str) -> None:
    body, content_type = served(Metrics(), accept)
    parse = parse_openmetrics if accept else parse_text
    names = set(families(parse(body.decode())))
    assert "elastic_quota_event_loop_lag_seconds" in names
    assert not names & set(QUOTA_FIGURES)
    assert content_type.startswith("application/openmetrics-text" if accept else "text/plain")


class _Family(Collector):
    def __init__(self, family: Metric) -> None:
        self.family = family

    def collect(self) -> Iterable[Metric]:
        return [self.family]


@pytest.mark.parametrize("value", ['a"b', "back\\slash", "new\nline", "plain-name", ""])
def test_label_values_are_escaped_as_prometheus_client_escapes_them(value: str) -> None:
    family = GaugeMetricFamily("x", "help", labels=["l"])
    family.add_metric([value], 1)
    assert f'x{{l="{label_value(value)}"}} 1.0' in generate_latest(_Family(family)).decode()


def test_the_body_comes_in_chunks_of_a_few_thousand_lines() -> None:
    """Never one string of the whole exposition (26.6 MB at 10,000 quotas): joining or encoding
    it would hold the interpreter's lock for tens of milliseconds at a time."""
    lines = [f"line {number}\n" for number in range(2 * LINES_AT_ONCE + 5)]
    chunks = list(in_chunks(lines))
    assert [chunk.count(b"\n") for chunk in chunks] == [LINES_AT_ONCE, LINES_AT_ONCE, 5]
    assert b"".join(chunks) == "".join(lines).encode()
    assert list(in_chunks([])) == []
