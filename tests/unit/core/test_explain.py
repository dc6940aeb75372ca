"""`explain`: the path, the blocking level and resource, the numbers, and what would change it."""

from __future__ import annotations

from pathlib import Path

import pytest

from elasticquota.cli import main
from elasticquota.core.decisions.explain import explain
from elasticquota.core.solve.results import Snapshot
from elasticquota.plan.compute import compute_plan
from elasticquota.plan.loader import load_paths

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return compute_plan(load_paths([EXAMPLES])).snapshot


def test_a_blocked_pending_pod_names_the_quota_resource_numbers_and_the_gap(
    snapshot: Snapshot,
) -> None:
    found = explain(snapshot, "analytics/report-3")
    assert found.state == "pending"
    assert found.verdict == "waits: quota analytics: cpu used 8 + request 16 > runtime 19429m"
    assert [level.quota for level in found.levels] == ["analytics"]
    assert found.levels[0].runtime == {"cpu": 19429, "memory": 64 * 2**30}
    assert found.advice[0].startswith("quota analytics needs 4571m more cpu")


def test_a_pending_pod_that_fits_says_so(snapshot: Snapshot) -> None:
    found = explain(snapshot, "analytics/report-2")
    assert found.verdict == "fits now (fits in quota analytics)"
    assert found.advice == []


def test_the_path_goes_up_to_the_top_level_quota(snapshot: Snapshot) -> None:
    found = explain(snapshot, "ml-research/train-1")
    assert [level.quota for level in found.levels] == ["ml-research", "engineering"]


def test_a_running_pod_of_an_over_used_quota_is_told_whether_it_is_a_victim(
    snapshot: Snapshot,
) -> None:
    victim = explain(snapshot, "ml-research/train-5")
    assert "the next revocation round evicts it" in victim.verdict
    assert "ml-research/train-4, ml-research/train-5" in victim.verdict
    spared = explain(snapshot, "ml-research/train-1")
    assert spared.verdict.endswith("this pod is not among the victims")


def test_a_running_pod_within_its_runtime(snapshot: Snapshot) -> None:
    assert explain(snapshot, "platform-ci/ci-runner-1").verdict == "within its quota's runtime"


def test_the_command_reads_manifests_and_reports_unknown_pods(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "report-3", "-n", "analytics", "-f", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out
    assert "verdict: waits: quota analytics: cpu used 8 + request 16 > runtime 19429m" in out
    assert "  analytics: cpu 19429m / 8 / 32" in out
    assert main(["explain", "nobody/nothing", "-f", str(EXAMPLES)]) == 1
    assert "pod nobody/nothing not found" in capsys.readouterr().err


def test_a_pod_being_evicted_says_so() -> None:
    from dataclasses import replace

    from elasticquota.core.model.models import PodInfo
    from elasticquota.core.solve.engine import QuotaEngine

    going = PodInfo(
        namespace="ns", name="p", requests={"cpu": 1000}, node_name="n1", phase="Running",
        terminating=True,
    )  # fmt: skip
    snapshot = QuotaEngine().load(pods=[going]).solve()
    found = explain(snapshot, "ns/p")
    assert found.state == "terminating"
    assert "revoked or preempted" in found.verdict
    assert replace(going, terminating=False).is_assigned


def test_a_quota_over_its_runtime_only_by_terminating_pods_evicts_nothing() -> None:
    """As the operator's round: a terminating pod's request counts as given back already."""
    from elasticquota.core.model.models import NodeInfo, PodInfo
    from elasticquota.core.model.quota import Quota
    from elasticquota.core.solve.engine import QuotaEngine

    def running(name: str, terminating: bool = False) -> PodInfo:
        return PodInfo(
            namespace="team", name=name, requests={"cpu": 1000}, node_name="n1",
            phase="Running", terminating=terminating,
        )  # fmt: skip

    team = Quota(name="team", namespace="team", max={"cpu": 2000})
    pods = [running("a"), running("b"), running("going", terminating=True)]
    node = NodeInfo(name="n1", allocatable={"cpu": 16_000})
    snapshot = QuotaEngine().load(quotas=[team], pods=pods, nodes=[node]).solve()
    assert snapshot.quotas["team"].used["cpu"] > snapshot.quotas["team"].runtime["cpu"]
    found = explain(snapshot, "team/a")
    assert found.verdict == "its quota is over its runtime only until its terminating pods are gone"


def test_a_pod_of_an_orphaned_quota_is_told_why_it_counts_against_the_default_quota() -> None:
    from elasticquota.core.keys import DEFAULT_QUOTA
    from elasticquota.core.model.models import PodInfo
    from elasticquota.core.model.quota import Quota
    from elasticquota.core.solve.engine import QuotaEngine

    orphan = Quota("team", "ns", max={"cpu": 4000}, parent="deleted-dept")
    pending = PodInfo(namespace="ns", name="p", requests={"cpu": 1000}, quota_label="team")
    found = explain(QuotaEngine().load([orphan], [pending]).solve(), "ns/p")

    assert found.quota == DEFAULT_QUOTA
    assert found.notes == [
        "ElasticQuota ns/team: orphaned: parent quota 'deleted-dept' does not exist; the quota "
        f"is left out of its tree and its pods count against {DEFAULT_QUOTA} until it is fixed"
    ]
    assert f"quota: {DEFAULT_QUOTA}\nnote: ElasticQuota ns/team: orphaned" in found.render()


def test_amounts_of_bytes_are_quoted_with_their_suffix_not_as_counts_of_bytes() -> None:
    """ephemeral-storage's canonical form is a count of bytes (53687091200 for 50Gi), and memory
    in decimal suffixes has none or an odd binary one (21000000000 for 21G, 19531250Ki for 20G):
    the verdict, the path and the advice say 50Gi, 21G and 20G."""
    from elasticquota.core.model.models import NodeInfo, PodInfo
    from elasticquota.core.model.quota import Quota
    from elasticquota.core.solve.engine import QuotaEngine

    gib = 1024**3
    team = Quota("team", "team", max={"ephemeral-storage": 50 * gib, "memory": 25 * 10**9})
    node = NodeInfo("n1", allocatable={"ephemeral-storage": 100 * gib, "memory": 64 * gib})
    running = PodInfo(
        namespace="team", name="a", requests={"ephemeral-storage": 15 * gib, "memory": 20 * 10**9},
        node_name="n1", phase="Running",
    )  # fmt: skip
    waiting = PodInfo(
        namespace="team", name="b", requests={"ephemeral-storage": 40 * gib, "memory": 1 * 10**9}
    )
    found = explain(QuotaEngine().load([team], [running, waiting], [node]).solve(), "team/b")
    assert found.verdict == (
        "waits: quota team: ephemeral-storage used 15Gi + request 40Gi > runtime 50Gi"
    )
    assert "  team: ephemeral-storage 50Gi / 15Gi / 55Gi, memory 21G / 20G / 21G" in found.render()
    assert found.advice == [
        "quota team needs 5Gi more ephemeral-storage: pods of the quota releasing that much, or "
        "its runtime growing by it (siblings lending more, a higher min or weight)"
    ]
