"""The readers start in an order that keeps the start-up work linear and sliced.

Quotas, profiles and nodes are listed first and the trees built once; only then are pods listed,
so that each pod is placed as it arrives instead of 100,000 pods being placed at once by the
rebuild that the last quota page would otherwise leave behind (seconds on the event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kubernetes_asyncio import client

from elasticquota.controller.ingest import Ingest
from elasticquota.controller.state import ControllerState
from elasticquota.kube.reflector import Reflector

if TYPE_CHECKING:
    from conftest import Bodies


def fake_run(
    reader: Reflector, feed: Callable[[], None], log: list[str]
) -> Callable[[], Awaitable[None]]:
    """A reader that lists ``feed``'s objects at once, then waits as a watch would."""

    async def run() -> None:
        log.append(f"start {reader.kind.name}")
        feed()
        reader.health.listed.set()
        await asyncio.Event().wait()

    return run


async def test_pods_are_listed_after_the_trees_are_built(
    state: ControllerState, api: client.ApiClient, k8s: Bodies
) -> None:
    ingest = Ingest(state, api)
    log: list[str] = []
    pods_placed: list[str | None] = []

    def feed_pods() -> None:
        state.on_pod(k8s.pod("p1", quota="team-a"))
        pods_placed.append(state.engine.tree_of_pod("team/p1"))  # None: only noted

    feeds = {
        "elasticquotas": lambda: state.on_quota(k8s.quota("team-a", max={"cpu": "4"})),
        "pods": feed_pods,
    }
    for reader in ingest.readers:
        feed = feeds.get(reader.kind.name, lambda: None)
        reader.run = fake_run(reader, feed, log)  # type: ignore[method-assign]
    task = asyncio.create_task(ingest.run())
    await asyncio.wait_for(state.synced.wait(), timeout=5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

    assert log[-1] == "start pods"
    assert sorted(log[:-1]) == ["start elasticquotaprofiles", "start elasticquotas", "start nodes"]
    assert pods_placed == [""]  # placed in its tree on arrival, not left for a rebuild
