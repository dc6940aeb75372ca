"""Quota names shared across namespaces, on the real API server, without the quota webhook.

A second quota with an existing quota's name, created in the same second (creation times have a
one-second resolution), must not take the name nor the pods of the original, neither while the
operator runs nor after it restarts: the operator records the owner on it
(``elasticquota.dev/name-owner``) and reports the newcomer, and both get a Warning Event that names
the other.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import harness
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.core import keys
from elasticquota.kube.apply import apply_manifest
from elasticquota.kube.quotas import QUOTA_GROUP, QUOTA_PLURAL, QUOTA_VERSION

pytestmark = pytest.mark.timeout(240)


def annotations(quota: dict[str, Any]) -> dict[str, str]:
    return dict(quota["metadata"].get("annotations") or {})


async def delete_quota(api: client.ApiClient, namespace: str, name: str) -> None:
    try:
        await client.CustomObjectsApi(api).delete_namespaced_custom_object(
            QUOTA_GROUP, QUOTA_VERSION, namespace, QUOTA_PLURAL, name
        )
    except ApiException as error:
        if error.status != 404:
            raise


async def gone(api: client.ApiClient, namespace: str, name: str) -> bool:
    try:
        await harness.get_quota(api, namespace, name)
    except ApiException as error:
        return error.status == 404
    return False


async def until_next_second() -> None:
    await asyncio.sleep(1.02 - time.time() % 1)


async def warnings_on(api: client.ApiClient, namespace: str, name: str) -> list[str]:
    events = await client.CoreV1Api(api).list_namespaced_event(namespace)
    return [
        event.message
        for event in events.items
        if event.involved_object.name == name and event.type == "Warning"
    ]


async def soon(
    condition: Any, what: str, operator: harness.OperatorProcess, timeout: float = 30
) -> None:
    """Poll every 20 ms: the owner must be seen well within its second of creation."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s\n{operator.output()}")
        await asyncio.sleep(0.02)


async def same_second_newcomer(
    api: client.ApiClient,
    operator: harness.OperatorProcess,
    name: str,
    owner_ns: str,
    newcomer_ns: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The owner, created and seen by the operator, then a newcomer created in the same second
    whose uid sorts first (its namespace does too): whatever forgets who came first picks it.
    Creation times and uids are the server's: tried until both come out so (about one try in
    three; at most 40 s)."""
    deadline = time.monotonic() + 40
    tries = 0
    while time.monotonic() < deadline:
        tries += 1
        await until_next_second()
        await apply_manifest(api, harness.quota_manifest(owner_ns, name, {}, {"cpu": "8"}))

        async def seen() -> bool:  # the operator wrote its figures: it knows the owner
            return keys.ANNO_RUNTIME in annotations(await harness.get_quota(api, owner_ns, name))

        await soon(seen, "the owner's figures written", operator)
        await apply_manifest(api, harness.quota_manifest(newcomer_ns, name, {}, {"cpu": "2"}))
        owner = await harness.get_quota(api, owner_ns, name)
        newcomer = await harness.get_quota(api, newcomer_ns, name)
        created = {q["metadata"]["creationTimestamp"] for q in (owner, newcomer)}
        if len(created) == 1 and newcomer["metadata"]["uid"] < owner["metadata"]["uid"]:
            return owner, newcomer
        for namespace in (newcomer_ns, owner_ns):
            await delete_quota(api, namespace, name)
            deleted = lambda ns=namespace: gone(api, ns, name)  # noqa: E731
            await soon(deleted, "quota deleted", operator)
    raise AssertionError(f"no same-second pair with the newcomer's uid first in {tries} tries")


async def test_a_same_second_newcomer_never_takes_the_name_across_a_restart(
    api: client.ApiClient,
) -> None:
    name = harness.unique("l2")
    owner_ns, newcomer_ns = harness.unique("base"), harness.unique("bad")  # "bad-..." sorts first
    for namespace in (owner_ns, newcomer_ns):
        await harness.ensure_namespace(api, namespace)
    labels = {keys.POD_LABEL_QUOTA: name}
    await apply_manifest(api, harness.pod_manifest(owner_ns, "worker", "3", labels=labels))

    async with harness.active_operator(harness.unique("first")) as first:
        owner, _ = await same_second_newcomer(api, first, name, owner_ns, newcomer_ns)
        uid = owner["metadata"]["uid"]

        async def both_told() -> bool:
            on_owner = await warnings_on(api, owner_ns, name)
            on_newcomer = await warnings_on(api, newcomer_ns, name)
            return any(
                f"also used by ElasticQuota {newcomer_ns}/{name}" in m for m in on_owner
            ) and any(f"already used by ElasticQuota {owner_ns}/{name}" in m for m in on_newcomer)

        await harness.eventually(both_told, 30, first, "a Warning Event on each naming the other")

        async def recorded() -> bool:
            stored = annotations(await harness.get_quota(api, owner_ns, name))
            return stored.get(keys.ANNO_NAME_OWNER) == uid

        await harness.eventually(recorded, 30, first, "the owner's name record")

        await harness.until_converged(api, 30, first, "plan agrees")
        squatter = annotations(await harness.get_quota(api, newcomer_ns, name))
        assert keys.ANNO_REQUEST not in squatter  # never computed: the worker is the owner's

    async with harness.active_operator(harness.unique("second")) as second:
        await harness.until_converged(api, 30, second, "converged after the restart")
        await asyncio.sleep(2)  # several passes of the new operator
        stored = await harness.get_quota(api, owner_ns, name)
        assert annotations(stored)[keys.ANNO_NAME_OWNER] == uid
        request = json.loads(annotations(stored)[keys.ANNO_REQUEST])
        assert request["cpu"] == "3"  # the worker still counts against the owner
        squatter = annotations(await harness.get_quota(api, newcomer_ns, name))
        assert keys.ANNO_REQUEST not in squatter
        for namespace in (newcomer_ns, owner_ns):
            await delete_quota(api, namespace, name)
        core = client.CoreV1Api(api)
        for namespace in (owner_ns, newcomer_ns):
            await core.delete_namespace(namespace)


async def test_a_parent_deleted_with_its_children_leaves_orphans_that_say_so(
    api: client.ApiClient,
) -> None:
    """Without the webhook nothing stops the delete: the child is not re-homed under the root,
    it is reported as an orphan (Event, plan) and its pods count against the default quota."""
    namespace = harness.unique("orphans")
    dept, team = harness.unique("dept"), harness.unique("team")
    await harness.ensure_namespace(api, namespace)
    await apply_manifest(
        api, harness.quota_manifest(namespace, dept, {"cpu": "4"}, {"cpu": "8"}, is_parent=True)
    )
    await apply_manifest(
        api, harness.quota_manifest(namespace, team, {"cpu": "2"}, {"cpu": "8"}, parent=dept)
    )
    labels = {keys.POD_LABEL_QUOTA: team}
    await apply_manifest(api, harness.pod_manifest(namespace, "worker", "1", labels=labels))
    async with harness.active_operator(harness.unique("orphans")) as operator:
        await harness.until_converged(api, 60, operator, "converged with the parent")

        await delete_quota(api, namespace, dept)
        reason = f"orphaned: parent quota '{dept}' does not exist"
        tail = f"its pods count against {keys.DEFAULT_QUOTA}"

        async def reported() -> bool:
            return any(
                reason in message and tail in message
                for message in await warnings_on(api, namespace, team)
            )

        await harness.eventually(reported, 30, operator, "a Warning Event on the orphan")
        await harness.until_converged(api, 30, operator, "converged without the parent")
        plan = await harness.cluster_plan(api)
        assert plan.snapshot.pod_quota[f"{namespace}/worker"] == keys.DEFAULT_QUOTA
        assert any(
            problem.object == f"ElasticQuota {namespace}/{team}" and reason in problem.message
            for problem in plan.problems
        )
        await client.CoreV1Api(api).delete_namespace(namespace)
