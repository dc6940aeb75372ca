"""The objects an engine under test was told about, kept apart from it, and what to compare.

Property tests apply random events both to an engine and to a ``World``, then compare the engine's
snapshot (``observable``) with that of a fresh engine loaded with the world's objects.
"""

from __future__ import annotations

from typing import Any

from engine_strategies import any_node, any_pod, any_quota
from hypothesis import strategies as st

from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine, Solver
from elasticquota.core.solve.results import Snapshot


def observable(snapshot: Snapshot) -> dict[str, Any]:
    """Everything a snapshot tells the outside world, as plain values."""
    return {
        "quotas": dict(snapshot.quotas),
        "totals": {tree: dict(total) for tree, total in snapshot.totals.items()},
        "pods": dict(snapshot.pods),
        "pod_quota": dict(snapshot.pod_quota),
        "pods_by_quota": {quota: list(pods) for quota, pods in snapshot.pods_by_quota.items()},
        "pods_of": {quota: list(snapshot.pods_of(quota)) for quota in snapshot.quotas},
        "problems": list(snapshot.problems),
    }


class World:
    """The objects of the moment: quotas, pods and nodes by key."""

    def __init__(self) -> None:
        self.quotas: dict[tuple[str, str], Quota] = {}
        self.pods: dict[str, PodInfo] = {}
        self.nodes: dict[str, NodeInfo] = {}

    def apply(self, engine: QuotaEngine, kind: str, item: Any) -> None:
        """One object event (``upsert_quota`` ... ``delete_node``), to the world and the engine."""
        if kind == "upsert_quota":
            self.quotas[(item.namespace, item.name)] = item
            engine.upsert_quota(item)
        elif kind == "delete_quota":
            self.quotas.pop((item.namespace, item.name), None)
            engine.delete_quota(item.namespace, item.name)
        elif kind == "upsert_pod":
            self.pods[item.key] = item
            engine.upsert_pod(item)
        elif kind == "delete_pod":
            self.pods.pop(item.key, None)
            engine.delete_pod(item.namespace, item.name)
        elif kind == "upsert_node":
            self.nodes[item.name] = item
            engine.upsert_node(item)
        else:
            assert kind == "delete_node", kind
            self.nodes.pop(item.name, None)
            engine.delete_node(item.name)

    def fresh(
        self,
        history: QuotaEngine,
        engine_settings: EngineSettings | None = None,
        solver: Solver | None = None,
    ) -> Snapshot:
        """The snapshot of a new engine loaded with the objects of the moment; quota names stay
        with the quotas that owned them in ``history`` (names several quotas share are the one
        thing an engine's past decides: a newcomer never takes a name from the quota holding it)."""
        owners = history.name_owners
        engine = (
            QuotaEngine(engine_settings, name_owners=owners)
            if solver is None
            else QuotaEngine(engine_settings, solver=solver, name_owners=owners)
        )
        return engine.load(self.quotas.values(), self.pods.values(), self.nodes.values()).solve()


#: One object event of any kind.
OBJECT_EVENT = st.one_of(
    st.tuples(st.just("upsert_quota"), any_quota()),
    st.tuples(st.just("delete_quota"), any_quota()),
    st.tuples(st.just("upsert_pod"), any_pod()),
    st.tuples(st.just("delete_pod"), any_pod()),
    st.tuples(st.just("upsert_node"), any_node()),
    st.tuples(st.just("delete_node"), any_node()),
)
