"""The demo's story (eqdev/demo/story.py) and its screen (eqdev/demo/view.py), without a cluster.

Rules: the reclaiming quota's pods (as ``plan`` accounts them) are held back and later created as
new pending requests (no node, no status); everything else is applied first; without such pods
there is no story. The narrator reports runtimes that moved and quotas that went over their
runtime or back, never on the first view. The pane shows the newest entries, oldest first, only
the operator's Events, wrapped to the table's width.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.kube.events import COMPONENT
from elasticquota.plan.loader import load_paths
from elasticquota.plan.table import WIDTH, cell
from eqdev.demo.story import Narrator, as_new_request, plan_story
from eqdev.demo.view import PaneEntry, event_entry, render_frame, render_pane

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
GI = 2**30


def test_the_examples_story_holds_back_analytics_pods_as_pending_requests() -> None:
    manifests = load_paths([EXAMPLES])
    story = plan_story(manifests)

    assert story is not None
    assert story.reclaimer == "analytics"
    assert sorted(pod["metadata"]["name"] for pod in story.later) == [
        "report-1",
        "report-2",
        "report-3",
    ]
    assert all("nodeName" not in pod["spec"] and "status" not in pod for pod in story.later)
    first_pods = [m["metadata"]["name"] for m in story.first if m.get("kind") == "Pod"]
    assert "train-5" in first_pods and not any(name.startswith("report-") for name in first_pods)
    assert len(story.first) + len(story.later) == len(manifests.pods) + sum(
        len(kind)
        for kind in (
            manifests.namespaces,
            manifests.priority_classes,
            manifests.nodes,
            manifests.profiles,
            manifests.quotas,
        )
    )


def test_no_story_without_pods_of_the_reclaimer() -> None:
    assert plan_story(load_paths([EXAMPLES]), reclaimer="platform-web-nonexistent") is None


def test_a_new_request_leaves_the_manifest_untouched() -> None:
    bound = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    assert as_new_request(bound) == {"metadata": {"name": "p"}, "spec": {}}
    assert bound["spec"] == {"nodeName": "n1"}


def result(name: str, runtime_cpu: int, used_cpu: int) -> QuotaResult:
    return QuotaResult(
        name=name, namespace="q", tree="", parent="koordinator-root-quota", is_parent=False,
        min={}, max={}, effective_min={}, shared_weight={}, request={}, child_request={},
        limited_request={}, non_preemptible_request={}, non_preemptible_used={},
        used={"cpu": used_cpu, "memory": 8 * GI}, runtime={"cpu": runtime_cpu, "memory": 64 * GI},
    )  # fmt: skip


def snapshot(*results: QuotaResult) -> Snapshot:
    return Snapshot(
        quotas={r.name: r for r in results}, totals={}, pods={}, pod_quota={}, pods_by_quota={}
    )


def test_the_narrator_tells_runtime_moves_and_over_use_but_not_the_first_view() -> None:
    narrator = Narrator(clock=lambda: 100.0)
    assert narrator.observe(snapshot(result("ml", 40_000, 40_000), result("an", 8_000, 0))) == []

    lines = narrator.observe(snapshot(result("ml", 28_571, 40_000), result("an", 19_429, 0)))

    cpu = {units: cell("cpu", units) for units in (8_000, 19_429, 28_571, 40_000)}
    assert lines == [
        (100.0, f"runtime of an grows: cpu {cpu[8_000]} -> {cpu[19_429]}"),
        (100.0, f"runtime of ml shrinks: cpu {cpu[40_000]} -> {cpu[28_571]}"),
        (100.0, f"ml is over its runtime: used cpu {cpu[40_000]}, memory 8Gi"),
    ]


def test_the_narrator_tells_when_a_quota_is_back_within_its_runtime() -> None:
    narrator = Narrator(clock=lambda: 5.0)
    narrator.observe(snapshot(result("ml", 40_000, 40_000)))
    narrator.observe(snapshot(result("ml", 28_000, 40_000)))
    assert narrator.observe(snapshot(result("ml", 28_000, 40_000))) == []
    assert narrator.observe(snapshot(result("ml", 28_000, 24_000))) == [
        (5.0, "ml is back within its runtime")
    ]


def event(component: str, reason: str = "Revoked", message: str = "evicted") -> Any:
    at = datetime.datetime(2026, 11, 25, 12, 0, 0, tzinfo=datetime.UTC)
    return SimpleNamespace(
        source=SimpleNamespace(component=component),
        reporting_component=component,
        involved_object=SimpleNamespace(kind="Pod", namespace="ml-research", name="train-5"),
        last_timestamp=at,
        event_time=None,
        first_timestamp=at,
        reason=reason,
        message=message,
    )


def test_only_the_operators_events_enter_the_pane() -> None:
    entry = event_entry(event(COMPONENT))
    assert entry == PaneEntry(
        datetime.datetime(2026, 11, 25, 12, tzinfo=datetime.UTC).timestamp(),
        "Revoked",
        "Pod ml-research/train-5: evicted",
    )
    assert event_entry(event("kubelet")) is None


def test_the_pane_shows_the_newest_entries_oldest_first_within_the_width() -> None:
    entries = [PaneEntry(float(at), "demo", f"line {at} " + "word " * 40) for at in range(20)]
    pane = render_pane(reversed(entries), lines=3)

    firsts = [line for line in pane[1:] if line.startswith("  ") and "line" in line]
    assert [line.split("line ")[1].split()[0] for line in firsts] == ["17", "18", "19"]
    assert all(len(line) <= WIDTH for line in pane)
    assert render_pane([])[-1] == "  (none yet)"


def test_repeats_are_collapsed_into_the_latest_with_a_count() -> None:
    entries = [
        PaneEntry(1.0, "QuotaOverUsed", "engineering: none evictable"),
        PaneEntry(2.0, "Revoked", "Pod ml/train-5"),
        PaneEntry(3.0, "QuotaOverUsed", "engineering: none evictable"),
    ]
    pane = render_pane(entries)
    assert [line.split(maxsplit=1)[1] for line in pane[1:]] == [
        "Revoked          Pod ml/train-5",
        "QuotaOverUsed    engineering: none evictable (x2)",
    ]


def test_the_frame_puts_the_steps_between_the_banner_and_the_trees() -> None:
    frame = render_frame("BANNER", ["Story: 1."], "TREE\n", ["PANE"])
    assert frame == "BANNER\n\nStory: 1.\n\nTREE\n\nPANE\n"
