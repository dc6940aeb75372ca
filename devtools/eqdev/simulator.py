"""SIMULATION for the local demo only: a stand-in for the scheduler and the kubelets.

The local control plane has neither, so pods would stay Pending forever and deleted pods would stay
Terminating forever. Plugged into the operator as an extra loop (:func:`simulation`, started by
``python -m eqdev.demo.operator``), the active replica, once per interval:

- binds every pending pod that fits its quota now (``core.decisions.admission``, highest priority
  first, then oldest) to a node with room for it (a profile tree's pods to the profile's nodes, the
  others to nodes outside every profile), and marks bound pods Running, as a scheduler and a kubelet
  do;
- tells once, with a ``WaitingForQuota`` Event, why a pending pod does not fit (and again only
  when the reason changes), as the admission gate does on servers that have scheduling gates;
- removes a deleted (e.g. evicted) bound pod at the end of its grace period, as a kubelet does
  once the containers have stopped, so that it stops counting in ``used``.

Every action is logged and posted as an Event with the word SIMULATION. It is development tooling,
not part of the installed operator: a real cluster never runs it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from elasticquota.controller.solving import solved_snapshot
from elasticquota.controller.state import ControllerState
from elasticquota.core.decisions.admission import check_pod
from elasticquota.core.decisions.gating import admission_order
from elasticquota.core.model.models import NodeInfo, PodInfo, ProfileSpec
from elasticquota.core.quantities.resources import ResourceList, add
from elasticquota.core.solve.results import Snapshot
from elasticquota.core.tree.profiles import profile_tree_id, selects
from elasticquota.kube.errors import describe
from eqdev.kubelet import KubeNodes, SimulatedNodes

if TYPE_CHECKING:
    from elasticquota.controller.runner import Operator

logger = logging.getLogger(__name__)


def _key(pod: PodInfo) -> str:
    """Pods are handled by key: a snapshot's pods come in no particular order."""
    return pod.key


def node_usage(pods: Iterable[PodInfo]) -> dict[str, ResourceList]:
    """What the pods bound to each node request."""
    usage: dict[str, ResourceList] = {}
    for pod in pods:
        if pod.is_assigned:
            usage[pod.node_name] = add(usage.get(pod.node_name, {}), pod.requests)
    return usage


def eligible_nodes(
    tree: str, nodes: Iterable[NodeInfo], profiles: Iterable[ProfileSpec]
) -> list[NodeInfo]:
    """A profile tree's nodes; for the default tree, the nodes no profile selects."""
    pool = list(profiles)
    own = [profile for profile in pool if profile_tree_id(profile) == tree]
    if own:
        return [node for node in nodes if any(selects(profile, node) for profile in own)]
    return [node for node in nodes if not any(selects(profile, node) for profile in pool)]


def choose_node(
    pod: PodInfo, candidates: Iterable[NodeInfo], usage: Mapping[str, ResourceList]
) -> str | None:
    """The first node (by name) whose free allocatable holds the pod's request; as the scheduler,
    never a cordoned or NotReady node."""
    for node in sorted(candidates, key=lambda item: item.name):
        if node.unschedulable or not node.ready:
            continue
        used = usage.get(node.name, {})
        if all(
            used.get(key, 0) + amount <= node.allocatable.get(key, 0)
            for key, amount in pod.requests.items()
            if amount
        ):
            return node.name
    return None


def stopped(pods: Iterable[PodInfo], now: float) -> list[PodInfo]:
    """Deleted bound pods whose grace period is over: a kubelet has stopped them by now."""
    return [
        pod
        for pod in pods
        if pod.terminating
        and pod.is_assigned
        and (pod.deletion_deadline is None or pod.deletion_deadline <= now)
    ]


class NodeSimulator:
    """Binds pods that fit, marks them Running and removes stopped ones, once per interval, on
    the active replica."""

    def __init__(
        self,
        state: ControllerState,
        cluster: SimulatedNodes,
        leading: asyncio.Event,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._state = state
        self._cluster = cluster
        self._leading = leading
        self._clock = clock
        #: The reason last told for each pending pod that waits (pruned to the pending pods).
        self._waiting: dict[str, str] = {}

    async def run(self, interval: float = 1.0) -> None:
        logger.warning("SIMULATION: binding pending pods and marking them Running (demo only)")
        await self._state.synced.wait()
        while True:
            await self._leading.wait()
            await self.step()
            await asyncio.sleep(interval)

    async def step(self) -> None:
        """One round: stopped pods removed, bound ones started, then at most one new binding per
        quota (usage changes after each)."""
        snapshot = await solved_snapshot(self._state.engine)
        await self._remove_stopped(snapshot)
        await self._start_bound_pods(snapshot)
        usage = node_usage(snapshot.pods.values())
        started: set[str] = set()
        pending = [pod for pod in snapshot.pods.values() if pod.counts_in_request]
        unbound = admission_order([p for p in pending if not p.node_name and not p.terminating])
        self._waiting = {key: why for key, why in self._waiting.items() if key in snapshot.pods}
        for pod in unbound:
            quota = snapshot.pod_quota.get(pod.key)
            if quota is None or quota in started:
                continue
            verdict = check_pod(snapshot, pod)
            if not verdict.admitted:
                await self._tell_waiting(pod, verdict.reason)
                continue
            tree = snapshot.quotas[quota].tree
            candidates = eligible_nodes(
                tree, self._state.engine.nodes.values(), self._state.profiles.values()
            )
            node = choose_node(pod, candidates, usage)
            if node is None:
                await self._tell_waiting(pod, "no node has room for it")
                continue
            await self._bind(pod, node, quota)
            usage[node] = add(usage.get(node, {}), pod.requests)
            started.add(quota)

    async def _remove_stopped(self, snapshot: Snapshot) -> None:
        for pod in sorted(stopped(snapshot.pods.values(), self._clock()), key=_key):
            logger.info("SIMULATION: pod %s stopped on %s; removing it", pod.key, pod.node_name)
            try:
                await self._cluster.remove_stopped_pod(pod.namespace, pod.name)
            except Exception as error:  # the next round tries again
                logger.warning("SIMULATION: could not remove %s: %s", pod.key, describe(error))
                continue
            await self._event(pod, "Stopped", f"the containers stopped on {pod.node_name}")

    async def _start_bound_pods(self, snapshot: Snapshot) -> None:
        bound = [
            pod
            for pod in snapshot.pods.values()
            if pod.node_name and pod.phase == "Pending" and not pod.terminating
        ]
        for pod in sorted(bound, key=_key):
            logger.info("SIMULATION: pod %s runs on %s", pod.key, pod.node_name)
            try:
                await self._cluster.mark_running(pod.namespace, pod.name)
            except Exception as error:  # e.g. deleted meanwhile: the next round sees it
                logger.warning("SIMULATION: could not start %s: %s", pod.key, error)

    async def _tell_waiting(self, pod: PodInfo, reason: str) -> None:
        """One Event per pod and reason: the pod waits, and why."""
        if self._waiting.get(pod.key) == reason:
            return
        self._waiting[pod.key] = reason
        await self._event(pod, "WaitingForQuota", f"waits: {reason}")

    async def _bind(self, pod: PodInfo, node: str, quota: str) -> None:
        logger.info("SIMULATION: binding pod %s to node %s", pod.key, node)
        self._waiting.pop(pod.key, None)
        try:
            await self._cluster.bind_pod(pod.namespace, pod.name, node)
            await self._cluster.mark_running(pod.namespace, pod.name)
        except Exception as error:
            logger.warning("SIMULATION: could not bind %s: %s", pod.key, error)
            return
        await self._event(pod, "Scheduled", f"fits quota {quota}: bound to {node}, Running")

    async def _event(self, pod: PodInfo, reason: str, message: str) -> None:
        involved = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
        try:
            await self._cluster.post_event(involved, reason, f"SIMULATION: {message}", "Normal")
        except Exception as error:
            logger.warning("SIMULATION: could not post an Event (%s): %s", reason, describe(error))


def simulation(operator: Operator) -> tuple[str, Awaitable[None]]:
    """The node simulation as an extra loop of ``operator`` (``controller.runner.ExtraLoop``): on
    its memory, its writers' client and its Lease."""
    simulator = NodeSimulator(operator.state, KubeNodes(operator.kube), operator.leader.leading)
    return "node simulation", simulator.run()
