"""ProblemReporter: a broken ElasticQuota gets one Warning Event per problem, on the object itself,
and a quota left out of its tree loses its computed figures and is marked invalid.

Rules (controller/reconcile/problems.py): each new (quota, message) is posted once with reason
``InvalidElasticQuota`` and the quota as ``involvedObject``; it is not posted again while it
stands, and is posted anew when it comes back after being fixed; a failed post is retried at the
next report; problems of other kinds (pods, nodes) only go to the log; dry-run posts nothing. A
problem is reported once it has stood for the reporter's grace: one that heals before (a child
quota applied with the profile whose root the operator writes a moment later) is never reported.
A quota left out gets ``elasticquota.dev/invalid`` with its problems and no computed annotation
nor ``status.used``, written once (nothing at the next reports); a refused write is tried again at
the next report and does not stop the other quotas from being marked.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.cluster import Cluster, DryRunCluster
from elasticquota.controller.reconcile.problems import REASON, ProblemReporter, Settling
from elasticquota.controller.reconcile.writer import Writer
from elasticquota.controller.state import ControllerState
from elasticquota.core import keys
from elasticquota.settings import Settings

if TYPE_CHECKING:
    from conftest import Bodies, WorkerThreads
    from fake_cluster import FakeCluster


def broken(k8s: Bodies) -> dict[str, object]:
    return k8s.quota("bad", min={"cpu": "8"}, max={"cpu": "4"})


def reporter_of(state: ControllerState, cluster: Cluster) -> ProblemReporter:
    return ProblemReporter(state, cluster, Writer(cluster, state, Settings()))


def messages(cluster: FakeCluster) -> list[str]:
    return [event["message"] for event in cluster.events]


async def test_each_problem_of_a_quota_is_posted_once_on_the_quota(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    state.on_quota(broken(k8s))
    reporter = reporter_of(state, cluster)

    await reporter.report()
    await reporter.report()

    expected = sorted(p.message for p in state.problems() if p.object == "ElasticQuota team/bad")
    assert len(expected) == 2  # min above max; the quota is left out
    assert sorted(messages(cluster)) == expected
    for event in cluster.events:
        assert event["reason"] == REASON == "InvalidElasticQuota"
        assert event["type"] == "Warning"
        assert event["involvedObject"] == state.quotas[("team", "bad")].involved()


@pytest.fixture
async def reporter(state: ControllerState, cluster: FakeCluster, k8s: Bodies) -> ProblemReporter:
    """A reporter that has reported the broken quota ``bad`` once."""
    reporter = reporter_of(state, cluster)
    state.on_quota(broken(k8s))
    await reporter.report()
    return reporter


async def test_a_problem_that_comes_back_is_posted_again(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, reporter: ProblemReporter
) -> None:
    first = len(cluster.events)

    state.on_quota(k8s.quota("bad", min={"cpu": "2"}, max={"cpu": "4"}))
    await reporter.report()
    assert len(cluster.events) == first  # fixed: nothing to say

    state.on_quota(broken(k8s))
    await reporter.report()
    assert len(cluster.events) == 2 * first


async def test_a_new_message_on_the_same_quota_is_posted(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, reporter: ProblemReporter
) -> None:
    cluster.events.clear()

    state.on_quota(k8s.quota("bad", min={"cpu": "-1"}, max={"cpu": "4"}))
    await reporter.report()

    assert any("negative" in message for message in messages(cluster))
    assert not any("greater than" in message for message in messages(cluster))


async def test_a_failed_post_is_retried_at_the_next_report(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("bad", max={"cpu": "lots"}))
    problems = [p for p in state.problems() if p.object == "ElasticQuota team/bad"]
    reporter = reporter_of(state, cluster)
    cluster.fail("post_event", *[ApiException(status=500)] * len(problems))

    await reporter.report()
    assert cluster.events == []
    await reporter.report()
    assert sorted(messages(cluster)) == sorted(p.message for p in problems)


async def test_a_problem_whose_event_keeps_failing_is_logged_once_while_it_stands(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies, caplog: pytest.LogCaptureFixture
) -> None:
    """Events refused at three reports (a 403: no right to post them): each problem is one
    WARNING, each refusal one more (it needs a person), not the problems again at every report."""
    state.on_quota(cluster.store(k8s.quota("bad", max={"cpu": "lots"})))
    problems = sorted(p.message for p in state.problems() if p.object == "ElasticQuota team/bad")
    reporter = reporter_of(state, cluster)
    cluster.fail("post_event", *[ApiException(status=403, reason="Forbidden")] * 3 * len(problems))
    with caplog.at_level(logging.WARNING, logger=ProblemReporter.__module__):
        for _ in range(3):
            await reporter.report()
    refused = "problem Events failed for ElasticQuota team/bad: HTTP 403: Forbidden"
    logged = [r.getMessage() for r in caplog.records if r.name == ProblemReporter.__module__]
    first = [
        line for message in problems for line in (f"ElasticQuota team/bad: {message}", refused)
    ]
    assert len(problems) == 2  # the invalid max, and the quota left out for it
    assert logged == first + [refused] * 2 * len(problems)


async def test_problems_of_other_kinds_post_no_event(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    state.on_pod(k8s.pod("p", requests={"cpu": "a lot"}))
    state.on_node(k8s.node("n1", allocatable={"cpu": "eight"}))
    assert {p.object for p in state.problems()} == {"Pod team/p", "Node /n1"}

    await reporter_of(state, cluster).report()

    assert cluster.calls == []


async def test_dry_run_posts_nothing(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    state.on_quota(broken(k8s))
    dry_run = DryRunCluster()
    await reporter_of(state, dry_run).report()
    assert cluster.calls == []
    assert {verb for verb, *_ in dry_run.calls} == {"write_quota", "post_event"}


COMPUTED = {
    keys.ANNO_RUNTIME: '{"cpu":"2"}',
    keys.ANNO_REQUEST: '{"cpu":"3"}',
    keys.ANNO_CHILD_REQUEST: '{"cpu":"3"}',
    keys.ANNO_NON_PREEMPTIBLE_REQUEST: '{"cpu":"0"}',
    keys.ANNO_NON_PREEMPTIBLE_USED: '{"cpu":"0"}',
}


def stored(cluster: FakeCluster, state: ControllerState, body: dict[str, object]) -> None:
    """The object in the cluster and in memory (as the watch delivers it)."""
    state.on_quota(cluster.store(body))


async def test_a_quota_left_out_loses_its_figures_and_is_marked_once(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    annotations = {**COMPUTED, "team.example/owner": "alice"}
    body = k8s.quota("bad", min={"cpu": "8"}, max={"cpu": "4"}, annotations=annotations)
    body["status"] = {"used": {"cpu": "3"}}
    stored(cluster, state, body)
    stored(cluster, state, k8s.quota("good", max={"cpu": "4"}, annotations=COMPUTED))
    reporter = reporter_of(state, cluster)

    await reporter.report()
    await reporter.report()

    bad = cluster.quotas[("team", "bad")]
    assert bad["metadata"]["annotations"] == {
        keys.ANNO_INVALID: "spec.min.cpu (8) is greater than spec.max.cpu (4)",
        "team.example/owner": "alice",
    }
    assert bad["status"] == {"used": {}}
    assert cluster.quotas[("team", "good")]["metadata"]["annotations"] == COMPUTED  # valid: kept
    writes = [call for call in cluster.calls if call[0] == "write_quota"]
    assert [(verb, name) for verb, _, name, _ in writes] == [
        ("write_quota", "bad"),
    ]  # once: the second report found the object marked already


async def test_a_descendant_of_a_quota_left_out_is_marked_too(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    stored(cluster, state, k8s.quota("dept", max={"cpu": "-1"}, is_parent=True))
    stored(cluster, state, k8s.quota("leaf", max={"cpu": "4"}, parent="dept", annotations=COMPUTED))

    await reporter_of(state, cluster).report()

    leaf = cluster.quotas[("team", "leaf")]["metadata"]["annotations"]
    assert leaf == {
        keys.ANNO_INVALID: "orphaned: parent quota 'dept' is left out; the quota is left out "
        "of its tree and its pods count against koordinator-default-quota until it is fixed"
    }


async def test_a_refused_mark_is_retried_and_does_not_stop_the_others(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    for name in ("bad-a", "bad-b"):
        stored(
            cluster,
            state,
            k8s.quota(name, min={"cpu": "8"}, max={"cpu": "4"}, annotations=COMPUTED),
        )
    cluster.fail("write_quota", ApiException(status=422, reason="Unprocessable"))
    reporter = reporter_of(state, cluster)

    await reporter.report()
    marked = {
        name
        for (_, name), body in cluster.quotas.items()
        if keys.ANNO_INVALID in body["metadata"]["annotations"]
    }
    assert marked == {"bad-b"}  # bad-a was refused, bad-b marked all the same

    await reporter.report()
    assert keys.ANNO_INVALID in cluster.quotas[("team", "bad-a")]["metadata"]["annotations"]


async def test_dry_run_marks_nothing(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    stored(cluster, state, k8s.quota("bad", min={"cpu": "8"}, max={"cpu": "4"}))
    await reporter_of(state, DryRunCluster()).report()
    assert cluster.calls == []
    assert keys.ANNO_INVALID not in state.quotas[("team", "bad")].annotations


async def test_a_broken_reserved_quota_written_by_its_tree_is_not_marked(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    """The engine uses the reference's defaults for a broken system quota and its tree loop
    writes them: marking it would undo those writes and be undone by them, every pass."""
    body = k8s.quota(
        keys.SYSTEM_QUOTA, keys.DEFAULT_RESERVED_NAMESPACE, min={"cpu": "8"}, max={"cpu": "4"}
    )
    stored(cluster, state, body)
    reporter = reporter_of(state, cluster)

    await reporter.report()  # its tree not solved yet: it waits
    state.results[keys.DEFAULT_TREE] = state.engine.solve_tree(keys.DEFAULT_TREE)
    await reporter.report()

    assert not [call for call in cluster.calls if call[0] in ("write_quota", "patch_quota")]
    assert any("greater than" in message for message in messages(cluster))  # still reported


async def test_a_report_after_a_quota_change_rebuilds_the_topology_off_the_loop(
    state: ControllerState,
    cluster: FakeCluster,
    k8s: Bodies,
    worker: WorkerThreads,
) -> None:
    state.on_quota(k8s.quota("newcomer", max={"cpu": "4"}))  # the topology is out of date

    await reporter_of(state, cluster).report()

    assert worker.names("compute_rebuild") >= 1
    assert threading.get_ident() not in worker.threads()


async def test_a_broken_user_limit_is_posted_on_its_quota_which_is_not_marked(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    """A user limit object that breaks a rule is a note on a quota that is still computed: one
    Warning Event naming the limit and the rule, like every problem, and no invalid marker."""
    limits = '[{"limit": "interns", "users": [], "groups": [], "maxapplications": 2}]'
    body = k8s.quota("team", max={"cpu": "4"}, annotations={keys.ANNO_USER_LIMITS: limits})
    stored(cluster, state, body)
    reporter = reporter_of(state, cluster)

    await reporter.report()
    await reporter.report()

    (event,) = cluster.events
    assert event["reason"] == REASON and event["type"] == "Warning"
    assert event["involvedObject"] == state.quotas[("team", "team")].involved()
    assert "interns" in event["message"] and "empty user and group lists" in event["message"]
    assert keys.ANNO_INVALID not in cluster.quotas[("team", "team")]["metadata"]["annotations"]
    assert not [call for call in cluster.calls if call[0] in ("write_quota", "patch_quota")]
    assert state.engine.tree_of_result("team") is not None  # still computed


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def patient(state: ControllerState, cluster: Cluster, clock: Clock) -> ProblemReporter:
    writer = Writer(cluster, state, Settings())
    return ProblemReporter(state, cluster, writer, Settling(grace=5, clock=clock))


def quota_writes(cluster: FakeCluster) -> list[str]:
    return [name for verb, _, name, _ in cluster.calls if verb == "write_quota"]


async def test_a_problem_is_reported_once_it_has_stood_for_the_grace(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    clock = Clock()
    reporter = patient(state, cluster, clock)
    stored(cluster, state, broken(k8s))
    for waited in (0.0, 4.9):
        clock.now = 100.0 + waited
        await reporter.report()
        assert (cluster.events, quota_writes(cluster)) == ([], [])
    clock.now = 105.0
    await reporter.report()
    assert len(cluster.events) == 2  # min above max; the quota is left out
    assert quota_writes(cluster) == ["bad"]
    assert keys.ANNO_INVALID in cluster.quotas[("team", "bad")]["metadata"]["annotations"]


async def test_a_problem_that_heals_within_the_grace_is_never_reported(
    state: ControllerState, cluster: FakeCluster, k8s: Bodies
) -> None:
    """The child of a profile's root quota, applied before the operator has written the root."""
    clock = Clock()
    reporter = patient(state, cluster, clock)
    stored(cluster, state, k8s.quota("training", max={"cpu": "4"}, parent="gpu-root"))
    await reporter.report()
    assert any("orphaned" in problem.message for problem in state.problems())
    clock.now += 2
    stored(cluster, state, k8s.quota("gpu-root", max={"cpu": "8"}, is_parent=True))
    await reporter.report()
    clock.now += 10
    await reporter.report()
    assert (cluster.events, quota_writes(cluster)) == ([], [])
