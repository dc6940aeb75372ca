"""Over-use revocation on a real API server: borrowed resources come back, after the delay only.

A profile tree of its own (one node, 10 cpu) keeps the test's arithmetic apart from the session's
other objects: ``lender`` and ``borrower`` each have min 5. The borrower runs four 2-cpu pods (used
8) while the lender is idle; then the lender asks for its min, the borrower's runtime drops to 5,
and after the delay its least important pods are evicted (a PodDisruptionBudget protects one of
them). The operator is restarted during the delay: the over-use start survives it. Its evictions
are counted with reason ``over-use``, by outcome (evicted, and blocked by the budget).

With ``REVOCATION_AROUND_BUDGETS`` the round chooses around the pod the budget keeps: the next
least important pod goes instead, in the same round. With ``REVOCATION_MIN_RUNTIME`` a pod that
started seconds ago stays and an older one of its priority goes instead.

A quota over-used with nothing evictable (its pods are non-preemptible) gets a round every delay,
forever: one Event object whose count grows, and an over-use start that never moves.

An eviction the API server refuses otherwise (two PodDisruptionBudgets over one pod: 500, the
eviction subresource supports one) leaves the pod, with a ``RevocationFailed`` Event that names
its uid, so that ``kubectl describe pod`` (whose field selector names the uid) lists it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator

import harness
import pytest
from kubernetes_asyncio import client
from profile_bodies import profile_body
from prometheus_client.parser import text_string_to_metric_families

from elasticquota.core import keys
from elasticquota.core.decisions.overuse import ANNO_OVER_USED_SINCE, parse_since
from elasticquota.kube.apply import apply_manifest
from eqdev.kubelet import mark_running

pytestmark = pytest.mark.timeout(300)
MERGE_PATCH = "application/merge-patch+json"
DELAY = 8.0


async def pool_tree(api: client.ApiClient, prefix: str) -> tuple[str, str, str]:
    """A profile over one 10-cpu node in a namespace of its own: (pool id, namespace, node)."""
    pool = uuid.uuid4().hex[:6]
    namespace, node = f"{prefix}-{pool}", f"node-{pool}"
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(api, harness.node_manifest(node, "10", "40Gi", {"pool": pool}))
    await apply_manifest(
        api,
        profile_body(
            "pool",
            namespace,
            quota_name=f"root-{pool}",
            match_labels={"pool": pool},
            quota_labels={keys.LABEL_IS_PARENT: "true"},
        ),
    )
    for name in ("lender", "borrower"):
        await apply_manifest(
            api,
            harness.quota_manifest(
                namespace, f"{name}-{pool}", {"cpu": "5"}, {"cpu": "10"}, parent=f"root-{pool}"
            ),
        )
    return pool, namespace, node


async def priority_classes(api: client.ApiClient, pool: str) -> None:
    for name, value in (("low", 0), ("mid", 10), ("high", 20)):
        await apply_manifest(
            api,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"{name}-{pool}"},
                "value": value,
            },
        )


async def running_pod(
    api: client.ApiClient, namespace: str, name: str, quota: str, node: str, priority: str
) -> None:
    labels = {keys.POD_LABEL_QUOTA: quota, "app": name}
    await apply_manifest(
        api,
        harness.pod_manifest(
            namespace, name, "2", labels=labels, node=node, priority_class=priority
        ),
    )
    await mark_running(api, namespace, name)
    await asyncio.sleep(1.1)  # distinct start times (second resolution): later = less important


async def terminating(api: client.ApiClient, namespace: str) -> set[str]:
    pods = await client.CoreV1Api(api).list_namespaced_pod(namespace)
    return {pod.metadata.name for pod in pods.items if pod.metadata.deletion_timestamp}


def eviction_counts(operator: harness.OperatorProcess) -> dict[tuple[str, str, str], float]:
    """``elastic_quota_evictions_total`` on the operator's /metrics, by (quota, reason, result)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {
        (sample.labels["quota"], sample.labels["reason"], sample.labels["result"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "elastic_quota_evictions_total"
    }


async def test_an_over_used_quota_gives_back_its_least_important_pods_after_the_delay(
    api: client.ApiClient,
) -> None:
    pool, namespace, node = await pool_tree(api, "revoke")
    await priority_classes(api, pool)
    borrower, lender = f"borrower-{pool}", f"lender-{pool}"
    for name, priority in (
        ("b-high", "high"),
        ("b-mid", "mid"),
        ("b-low-a", "low"),
        ("b-low-b", "low"),
    ):
        await running_pod(api, namespace, name, borrower, node, f"{priority}-{pool}")
    # b-low-b started last: the first to try; a PodDisruptionBudget protects it
    await harness.create_pdb(api, namespace, "b-low-b")
    args = ("--revocation-delay", str(DELAY))
    first = harness.OperatorProcess(f"rv-{pool}", *args).start()
    second: harness.OperatorProcess | None = None
    try:
        await first.wait_ready()
        await first.wait_active()

        async def borrower_runtime_is(cpu: str) -> bool:
            annotations = (await harness.get_quota(api, namespace, borrower))["metadata"].get(
                "annotations"
            ) or {}
            runtime = json.loads(annotations.get(keys.ANNO_RUNTIME, "{}"))
            return bool(runtime.get("cpu") == cpu)

        await harness.eventually(
            lambda: borrower_runtime_is("8"), 60, first, "the borrower holds 8 cpu"
        )

        # the lender asks for its min: the borrower's runtime drops to 5, it is over-used
        await apply_manifest(
            api, harness.pod_manifest(namespace, "l-1", "5", labels={keys.POD_LABEL_QUOTA: lender})
        )
        await harness.eventually(
            lambda: borrower_runtime_is("5"), 30, first, "the borrower's runtime drops"
        )

        async def since() -> float | None:
            quota = await harness.get_quota(api, namespace, borrower)
            return parse_since(
                (quota["metadata"].get("annotations") or {}).get(ANNO_OVER_USED_SINCE)
            )

        async def since_recorded() -> bool:
            return await since() is not None

        await harness.eventually(since_recorded, 30, first, "the over-use start is recorded")
        started = await since()
        assert started is not None
        assert await terminating(api, namespace) == set()  # nothing before the delay

        first.stop()  # a restart during the delay
        second = harness.OperatorProcess(f"rv2-{pool}", *args).start()
        await second.wait_ready()
        await second.wait_active()
        active_at = time.time()

        async def evicted() -> bool:
            return "b-low-a" in await terminating(api, namespace)

        await harness.eventually(
            evicted, 60, second, "the least important evictable pod is evicted"
        )
        evicted_at = time.time()
        assert evicted_at >= started + DELAY  # not before the delay...
        # ...and the restart did not start it over (that would take a full delay from the new
        # replica's start; how long the restart took does not matter)
        assert evicted_at < max(started + DELAY, active_at) + DELAY / 2
        # a round restarts only the round clock: the over-use began when it began
        assert await since() == started

        await asyncio.sleep(2)
        assert await terminating(api, namespace) == {"b-low-a"}  # the PDB kept b-low-b
        events = await client.CoreV1Api(api).list_namespaced_event(namespace)
        reasons = {(event.involved_object.name, event.reason) for event in events.items}
        assert ("b-low-b", "RevocationBlocked") in reasons
        assert ("b-low-a", "Revoked") in reasons
        assert (borrower, "QuotaOverUsed") in reasons
        # counted as revocation's (reason over-use), by outcome; nothing as a preemption
        evictions = eviction_counts(second)
        assert evictions[(borrower, "over-use", "evicted")] == 1, evictions
        assert evictions[(borrower, "over-use", "blocked")] >= 1, evictions
        assert {reason for _, reason, _ in evictions} == {"over-use"}, evictions
        # the local 1.20 API server has no scheduling gates: detected, said once, revocation runs
        assert second.output().count("has no pod scheduling gates") == 1
    finally:
        first.stop()
        if second is not None:
            second.stop()


async def borrower_of_three(
    api: client.ApiClient, prefix: str, low: str, lower: str
) -> tuple[str, str]:
    """A pool tree whose borrower runs three 2-cpu pods (used 6 of the lender's idle 5): b-mid
    (mid), then ``low`` and ``lower`` (low priority, ``lower`` started last). (pool, namespace)"""
    pool, namespace, node = await pool_tree(api, prefix)
    await priority_classes(api, pool)
    for name, priority in (("b-mid", "mid"), (low, "low"), (lower, "low")):
        await running_pod(api, namespace, name, f"borrower-{pool}", node, f"{priority}-{pool}")
    return pool, namespace


@contextlib.asynccontextmanager
async def only_one_goes(
    api: client.ApiClient,
    pool: str,
    namespace: str,
    env: dict[str, str],
    victim: str,
    instead_of: str,
) -> AsyncIterator[harness.OperatorProcess]:
    """An operator with ``env`` (delay 2 s); the lender asks for its min (a 5-cpu pod): the
    borrower's runtime drops to 5, and of its three 2-cpu pods ``victim`` goes, ``instead_of``
    the reference's victim, and no other (4 cpu left fit 5). The operator, still running."""
    async with harness.active_operator(
        f"one-{pool}", "--revocation-delay", "2", env=env
    ) as operator:
        lender = {keys.POD_LABEL_QUOTA: f"lender-{pool}"}
        await apply_manifest(api, harness.pod_manifest(namespace, "l-1", "5", labels=lender))

        async def evicted() -> bool:
            return victim in await terminating(api, namespace)

        await harness.eventually(evicted, 60, operator, f"{victim} goes instead of {instead_of}")
        await asyncio.sleep(2)
        assert await terminating(api, namespace) == {victim}
        yield operator


async def test_around_budgets_the_next_pod_goes_instead_of_the_one_a_budget_keeps(
    api: client.ApiClient,
) -> None:
    """``REVOCATION_AROUND_BUDGETS``: the borrower (three 2-cpu pods) drops to a runtime of 5;
    its least important pod, b-low-b, is the one victim, a PodDisruptionBudget keeps it, and
    b-low-a goes in the same round instead."""
    pool, namespace = await borrower_of_three(api, "around", "b-low-a", "b-low-b")
    await harness.create_pdb(api, namespace, "b-low-b")
    env = {"ELASTIC_QUOTA_REVOCATION_AROUND_BUDGETS": "true"}
    async with only_one_goes(api, pool, namespace, env, "b-low-a", "b-low-b") as operator:
        events = await client.CoreV1Api(api).list_namespaced_event(namespace)
        told = {(event.involved_object.name, event.reason) for event in events.items}
        assert {("b-low-b", "RevocationBlocked"), ("b-low-a", "Revoked")} <= told
        counts = eviction_counts(operator)
        assert counts[(f"borrower-{pool}", "over-use", "evicted")] == 1, counts


async def test_with_a_minimum_runtime_the_older_pod_goes_instead_of_the_young_one(
    api: client.ApiClient,
) -> None:
    """``REVOCATION_MIN_RUNTIME`` 600: of the borrower's two low pods, b-young (started last,
    the reference's victim) has run seconds only, b-old an hour; b-old goes, and the Event names
    b-young."""
    pool, namespace = await borrower_of_three(api, "young", "b-old", "b-young")
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    await client.CoreV1Api(api).patch_namespaced_pod_status(
        "b-old", namespace, {"status": {"startTime": an_hour_ago}}, _content_type=MERGE_PATCH
    )  # it has run for an hour: no minimum protects it
    env = {"ELASTIC_QUOTA_REVOCATION_MIN_RUNTIME": "600"}
    async with only_one_goes(api, pool, namespace, env, "b-old", "b-young"):
        events = await client.CoreV1Api(api).list_namespaced_event(namespace)
        (told,) = [event.message for event in events.items if event.reason == "QuotaOverUsed"]
        assert f"evicting: {namespace}/b-old; spared until they have run 600s: " in told
        assert f"{namespace}/b-young (until " in told


async def test_an_over_use_with_nothing_evictable_is_one_event_and_one_start(
    api: client.ApiClient,
) -> None:
    pool, namespace, node = await pool_tree(api, "stuck")
    borrower, lender = f"borrower-{pool}", f"lender-{pool}"
    for name in ("np-a", "np-b"):
        labels = {keys.POD_LABEL_QUOTA: borrower, keys.POD_LABEL_PREEMPTIBLE: "false"}
        await apply_manifest(
            api, harness.pod_manifest(namespace, name, "4", labels=labels, node=node)
        )
        await mark_running(api, namespace, name)
    delay = 2.0
    async with harness.active_operator(f"st-{pool}", "--revocation-delay", str(delay)) as operator:
        # the lender asks for its min: the borrower (used 8) drops to a runtime of 5
        await apply_manifest(
            api, harness.pod_manifest(namespace, "l-1", "5", labels={keys.POD_LABEL_QUOTA: lender})
        )

        async def over_use_events() -> list[client.CoreV1Event]:
            events = await client.CoreV1Api(api).list_namespaced_event(namespace)
            return [
                event
                for event in events.items
                if event.involved_object.name == borrower and event.reason == "QuotaOverUsed"
            ]

        async def rounds_repeated() -> bool:
            return sum(event.count or 1 for event in await over_use_events()) >= 2

        await harness.eventually(rounds_repeated, 60, operator, "a second round on the borrower")
        started = (await harness.get_quota(api, namespace, borrower))["metadata"]["annotations"][
            ANNO_OVER_USED_SINCE
        ]
        await asyncio.sleep(3 * delay + 1)  # three more delays: three more rounds

        (event,) = await over_use_events()  # one Event for the one state...
        assert event.count >= 4, event  # ...counting every round
        assert "none evictable" in event.message
        assert event.last_timestamp > event.first_timestamp
        quota = await harness.get_quota(api, namespace, borrower)
        assert quota["metadata"]["annotations"][ANNO_OVER_USED_SINCE] == started
        assert await terminating(api, namespace) == set()


async def test_a_failed_eviction_is_listed_where_kubectl_describe_pod_looks(
    api: client.ApiClient,
) -> None:
    """The borrower (two 4-cpu pods) drops to a runtime of 5: its later pod is the victim, and
    two budgets cover it, so the API server refuses its eviction (500, after the retries)."""
    pool, namespace, node = await pool_tree(api, "failed")
    borrower, lender = f"borrower-{pool}", f"lender-{pool}"
    for name in ("b-a", "b-b"):
        labels = {keys.POD_LABEL_QUOTA: borrower, "app": "b"}
        await apply_manifest(
            api, harness.pod_manifest(namespace, name, "4", labels=labels, node=node)
        )
        await mark_running(api, namespace, name)
        await asyncio.sleep(1.1)  # distinct start times: b-b, the later, is the victim
    for budget in ("one", "two"):
        await harness.create_pdb(api, namespace, "b", budget)
    victim = await client.CoreV1Api(api).read_namespaced_pod("b-b", namespace)
    describe = (
        f"involvedObject.name=b-b,involvedObject.namespace={namespace},"
        f"involvedObject.kind=Pod,involvedObject.uid={victim.metadata.uid}"
    )
    async with harness.active_operator(f"fl-{pool}", "--revocation-delay", "2") as operator:
        await apply_manifest(
            api, harness.pod_manifest(namespace, "l-1", "5", labels={keys.POD_LABEL_QUOTA: lender})
        )

        async def described() -> list[client.CoreV1Event]:
            events = await client.CoreV1Api(api).list_namespaced_event(
                namespace, field_selector=describe
            )
            return [event for event in events.items if event.reason == "RevocationFailed"]

        async def failed_event_listed() -> bool:
            return bool(await described())

        await harness.eventually(
            failed_event_listed, 60, operator, "RevocationFailed listed for pod b-b"
        )
        (event,) = await described()
        assert "more than one PodDisruptionBudget" in event.message, event.message
        assert "over-use failed: HTTP 500: " in event.message, event.message
        assert await terminating(api, namespace) == set()  # the pod stays
