"""ProblemReporter: a broken ElasticQuota gets one Warning Event per problem, on the object itself.

Rules (controller/problems.py): each new (quota, message) is posted once with reason
``InvalidElasticQuota`` and the quota as ``involvedObject``; it is not posted again while it
stands, and is posted anew when it comes back after being fixed; a failed post is retried at the
next report; problems of other kinds (pods, nodes) only go to the log; dry-run posts nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.problems import REASON, ProblemReporter
from elasticquota.controller.state import ControllerState

if TYPE_CHECKING:
    from conftest import Bodies, FakeCluster


def broken(k8s: Bodies) -> dict[str, object]:
    return k8s.quota("bad", min={"cpu": "8"}, max={"cpu": "4"})


def messages(cluster: FakeCluster) -> list[str]:
    return [event["message"] for event in cluster.events]


async def test_each_problem_of_a_quota_is_posted_once_on_the_quota(
    state: ControllerState, cluster: FakeCluster, api: client.ApiClient, k8s: Bodies
) -> None:
    state.on_quota(broken(k8s))
    reporter = ProblemReporter(state, api, dry_run=False)

    await reporter.report()
    await reporter.report()

    expected = sorted(p.message for p in state.problems() if p.object == "ElasticQuota team/bad")
    assert len(expected) == 2  # min above max; the quota is left out
    assert sorted(messages(cluster)) == expected
    for event in cluster.events:
        assert event["reason"] == REASON == "InvalidElasticQuota"
        assert event["type"] == "Warning"
        assert event["involvedObject"] == state.quotas[("team", "bad")].involved()


async def test_a_problem_that_comes_back_is_posted_again(
    state: ControllerState, cluster: FakeCluster, api: client.ApiClient, k8s: Bodies
) -> None:
    reporter = ProblemReporter(state, api, dry_run=False)
    state.on_quota(broken(k8s))
    await reporter.report()
    first = len(cluster.events)

    state.on_quota(k8s.quota("bad", min={"cpu": "2"}, max={"cpu": "4"}))
    await reporter.report()
    assert len(cluster.events) == first  # fixed: nothing to say

    state.on_quota(broken(k8s))
    await reporter.report()
    assert len(cluster.events) == 2 * first


async def test_a_new_message_on_the_same_quota_is_posted(
    state: ControllerState, cluster: FakeCluster, api: client.ApiClient, k8s: Bodies
) -> None:
    reporter = ProblemReporter(state, api, dry_run=False)
    state.on_quota(broken(k8s))
    await reporter.report()
    cluster.events.clear()

    state.on_quota(k8s.quota("bad", min={"cpu": "-1"}, max={"cpu": "4"}))
    await reporter.report()

    assert any("negative" in message for message in messages(cluster))
    assert not any("greater than" in message for message in messages(cluster))


async def test_a_failed_post_is_retried_at_the_next_report(
    state: ControllerState, cluster: FakeCluster, api: client.ApiClient, k8s: Bodies
) -> None:
    state.on_quota(k8s.quota("bad", max={"cpu": "lots"}))
    problems = [p for p in state.problems() if p.object == "ElasticQuota team/bad"]
    reporter = ProblemReporter(state, api, dry_run=False)
    cluster.fail("post_event", *[ApiException(status=500)] * len(problems))

    await reporter.report()
    assert cluster.events == []
    await reporter.report()
    assert sorted(messages(cluster)) == sorted(p.message for p in problems)


async def test_problems_of_other_kinds_post_no_event(
    state: ControllerState, cluster: FakeCluster, api: client.ApiClient, k8s: Bodies
) -> None:
    state.on_pod(k8s.pod("p", requests={"cpu": "a lot"}))
    state.on_node(k8s.node("n1", allocatable={"cpu": "eight"}))
    assert {p.object for p in state.problems()} == {"Pod team/p", "Node /n1"}

    await ProblemReporter(state, api, dry_run=False).report()

    assert cluster.calls == []


async def test_dry_run_posts_nothing(
    state: ControllerState, cluster: FakeCluster, api: client.ApiClient, k8s: Bodies
) -> None:
    state.on_quota(broken(k8s))
    await ProblemReporter(state, api, dry_run=True).report()
    assert cluster.calls == []
