"""The operator's memory: the engine, the objects as last seen, and the signals for the loops.

The readers (``controller.ingest``, one per kind) call ``on_*`` with raw bodies: that is the only
way in, where objects are parsed and stored. The write path only keeps the object a write returned
for the next diff (``keep_written``, ``keep_created``), without judging it or waking anything.
Nothing here does I/O. Each change updates the engine (which marks trees dirty) and wakes the
loops concerned: a pod its trees' loops (``tree_wakes``), the others the reconciler's dispatcher
(``trees_changed``, which routes the quota objects seen to their tree's loop) or the profile
controller.
``synced`` is set once the initial listing of every watched kind is in memory: no loop writes
before it, so a restart never writes from a half-known cluster.

The loops leave what the metrics read at scrape time here too: each tree's latest results, the
pods the gate holds per quota, and when the first pod event made a tree out of date (monotonic
clock; only once synced, and only for an event that changed what the engine holds).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticquota.api.parse import (
    QuotaParse,
    parse_node,
    parse_pod,
    parse_profile,
    parse_quota_object,
)
from elasticquota.controller.echoes import as_written, echoed, figures_written, same_inputs
from elasticquota.controller.quotalog import ObjectKey, QuotaChangeLog
from elasticquota.core.model.models import PodInfo, Problem, ProfileSpec
from elasticquota.core.model.quota import Quota
from elasticquota.core.model.quotaread import quota_key, read_quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine
from elasticquota.core.solve.results import QuotaResult
from elasticquota.kube.readerparts import ReaderHealth

logger = logging.getLogger(__name__)

#: Pod keys compared with a relist between two yields to the event loop (about 1 ms of work).
FORGET_CHUNK = 2_000

#: Seconds a reader may be disconnected before the replica stops being ready (a reconnect that
#: heals at once does not flap readiness).
READY_GRACE = 5.0


@dataclass(slots=True)
class ControllerState:
    """Everything the loops read; fed by the readers."""

    engine: QuotaEngine
    ignore_namespaces: frozenset[str] = frozenset()
    #: Each quota object as last seen (the reader's, or what a write returned): what the writer
    #: diffs and the webhooks' catalog indexes.
    quotas: dict[ObjectKey, Quota] = field(default_factory=dict)
    profiles: dict[ObjectKey, ProfileSpec] = field(default_factory=dict)
    profile_labels: dict[ObjectKey, dict[str, str]] = field(default_factory=dict)
    #: Problems found while parsing each object (by its reference string).
    parse_problems: dict[str, list[Problem]] = field(default_factory=dict)
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    #: Wakes the reconciler's dispatcher (quotas, nodes, the sync); pods wake ``tree_wakes``,
    #: each running tree loop's wake-up (kept by the reconciler).
    trees_changed: asyncio.Event = field(default_factory=asyncio.Event)
    tree_wakes: dict[str, asyncio.Event] = field(default_factory=dict)
    profiles_changed: asyncio.Event = field(default_factory=asyncio.Event)
    #: The API server keeps pod scheduling gates (set once the version is known).
    gates_supported: bool = False
    #: Each tree's results as its loop last solved them (active replica only).
    results: dict[str, Mapping[str, QuotaResult]] = field(default_factory=dict)
    #: Pods the admission gate held back at the last gating round, per quota and reason.
    gated: dict[tuple[str, str], int] = field(default_factory=dict)
    #: Per tree: when the first pod event not yet reflected in its writes arrived (monotonic).
    pod_event_at: dict[str, float] = field(default_factory=dict)
    #: Names of the quota objects seen (changed, echoed, relisted, deleted) since the reconciler
    #: last took them: their tree's loop diffs them at its next pass.
    changed_quotas: set[str] = field(default_factory=set)
    #: Each kind's reader: listed, connected, since when not (readiness and metrics read it).
    readers: dict[str, ReaderHealth] = field(default_factory=dict)
    #: Every quota object key stored, replaced or dropped, in change order: what follows the
    #: quotas (the webhooks' catalog) reads only what changed since it last looked.
    quota_log: QuotaChangeLog = field(default_factory=QuotaChangeLog)
    #: Per quota object: the object whose inputs the engine holds (the reader parsed it). The
    #: write path replaces ``quotas`` with what the cluster answered, never this: only the reader
    #: decides whether a quota is parsed again.
    parsed: dict[ObjectKey, Quota] = field(default_factory=dict)
    #: Told each pod event: the pod's key, the pod as it is now (None: gone or unusable) and the
    #: event's ``metadata.creationTimestamp`` ("" when unknown: which pod of that name it is).
    pod_listeners: list[Callable[[str, PodInfo | None, str], None]] = field(default_factory=list)
    #: How a quota object is read and judged for the engine (a test counts the calls).
    quota_parser: Callable[[Mapping[str, Any]], QuotaParse] = parse_quota_object

    @classmethod
    def create(
        cls,
        engine_settings: EngineSettings,
        ignore_namespaces: frozenset[str] = frozenset(),
        quota_parser: Callable[[Mapping[str, Any]], QuotaParse] = parse_quota_object,
    ) -> ControllerState:
        return cls(
            engine=QuotaEngine(engine_settings),
            ignore_namespaces=ignore_namespaces,
            quota_parser=quota_parser,
        )

    # -- handlers' entry points -----------------------------------------------------------------

    def on_quota(self, body: Mapping[str, Any]) -> None:
        key = quota_key(body)
        previous = self.parsed.get(key)
        self.quota_log.note(key, self.quotas)
        self.changed_quotas.add(key[1])
        if previous is not None and same_inputs(previous, body):
            self.quotas[key] = echoed(self.quotas.get(key), previous, body)
            self._trees_changed()  # the object is diffed again, the engine holds its spec
            return
        parse = self.quota_parser(body)
        self._record(f"ElasticQuota {key[0]}/{key[1]}", parse.problems)
        quota = parse.quota
        if quota is None:  # no name: nothing the writer or the engine could hold
            self.quotas.pop(key, None)
            self.parsed.pop(key, None)
            self.engine.delete_quota(*key)
        else:
            self.quotas[key] = self.parsed[key] = quota
            if parse.usable:
                self.engine.upsert_quota(quota)
            else:
                self.engine.hold_name(quota)  # left out, but the name stays its own
        self._trees_changed()
        if (quota is not None and quota.is_root) or (previous is not None and previous.is_root):
            self.profiles_changed.set()  # a root changed, or stopped being one (labels edited)

    def on_quota_deleted(self, body: Mapping[str, Any]) -> None:
        namespace, name = quota_key(body)
        self.quotas.pop((namespace, name), None)
        self.parsed.pop((namespace, name), None)
        self.quota_log.note((namespace, name), self.quotas)
        self.changed_quotas.add(name)
        self.parse_problems.pop(f"ElasticQuota {namespace}/{name}", None)
        self.engine.delete_quota(namespace, name)
        self._trees_changed()
        self.profiles_changed.set()

    def on_pod(self, body: Mapping[str, Any], deleted: bool = False) -> None:
        """A pod listed, watched or ``deleted``: parsed, stored in the engine or dropped, and the
        loops of the trees it touched woken here, with no dispatcher in between."""
        metadata = body.get("metadata") or {}
        namespace, name = str(metadata.get("namespace", "")), str(metadata.get("name", ""))
        if namespace in self.ignore_namespaces:
            return
        pod, problems = (None, []) if deleted else parse_pod(body)
        self._record(f"Pod {namespace}/{name}", problems)
        key = f"{namespace}/{name}"
        created = str(metadata.get("creationTimestamp") or "")
        for listener in self.pod_listeners:
            listener(key, pod, created)
        if self.engine.pods.get(key) == pod:
            return  # the same pod again, gone already, or still unusable
        before = self.engine.tree_of_pod(key)
        if pod is None:
            self.engine.delete_pod(namespace, name)
        else:
            self.engine.upsert_pod(pod)
        for wake in self._pod_moved(key, before):
            wake.set()

    #: The pod reader's deletions: ``on_pod`` itself, with nothing to store.
    on_pod_deleted = functools.partialmethod(on_pod, deleted=True)

    def on_node(self, body: Mapping[str, Any]) -> None:
        node, problems = parse_node(body)
        name = str((body.get("metadata") or {}).get("name", ""))
        self._record(f"Node /{name}", problems)
        if node is None:
            self.engine.delete_node(name)
        else:
            self.engine.upsert_node(node)
        self._trees_changed()
        self.profiles_changed.set()

    def on_node_deleted(self, body: Mapping[str, Any]) -> None:
        name = str((body.get("metadata") or {}).get("name", ""))
        self.parse_problems.pop(f"Node /{name}", None)
        self.engine.delete_node(name)
        self._trees_changed()
        self.profiles_changed.set()

    def on_profile(self, body: Mapping[str, Any]) -> None:
        metadata = body.get("metadata") or {}
        key = (str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        profile, problems = parse_profile(body)
        self._record(f"ElasticQuotaProfile {key[0]}/{key[1]}", problems)
        if profile is None:
            self.profiles.pop(key, None)
        else:
            self.profiles[key] = profile
            self.profile_labels[key] = dict(metadata.get("labels") or {})
        self.profiles_changed.set()

    def on_profile_deleted(self, body: Mapping[str, Any]) -> None:
        metadata = body.get("metadata") or {}
        key = (str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        self.parse_problems.pop(f"ElasticQuotaProfile {key[0]}/{key[1]}", None)
        self.profiles.pop(key, None)
        self.profile_labels.pop(key, None)
        self.profiles_changed.set()

    # -- the write path's answers ---------------------------------------------------------------

    def keep_written(self, body: Mapping[str, Any] | None, inputs: bool = False) -> None:
        """Keep the object a write returned as the one the next diff reads (None: nothing was
        sent, as in a dry run), so that a pass right after shows what was written. Not intake:
        the engine is untouched, no loop is woken, no problem recorded; the watch brings the
        same object to ``on_quota``, which parses it if its inputs changed and has it diffed
        again. A write of annotations or status (the usual) keeps memory's reading of the
        object's inputs, with the answer's figures (``echoes.figures_written``): the inputs are
        the watch's to bring, and an answer that reaches the writer after the watch brought an
        edit would otherwise put the object as it was before the edit back (a profile root's min
        edited by hand then looked as the profile controller wants it, and stayed). A write of
        the inputs (``inputs``: a profile's root, a name record) is read
        (``core.model.quotaread``). An answer about an object memory no longer holds (none under
        its name, or one with another uid) is dropped: the watch brought its deletion (and a new
        quota of that name) after the write, so the answer is older than memory; kept, it would
        bring back a deleted quota, or hide a new one's missing figures from the next diff."""
        if body is None:
            return
        key = quota_key(body)
        current = self.quotas.get(key)
        if current is None or current.uid != str((body.get("metadata") or {}).get("uid", "")):
            return  # deleted (and maybe created anew) since: the watch said so after the write
        if same_inputs(current, body):
            self.quotas[key] = as_written(current, body)
        elif inputs:
            self.quotas[key] = read_quota(body).quota
        else:
            self.quotas[key] = figures_written(current, body)

    def keep_created(self, body: Mapping[str, Any] | None) -> None:
        """``keep_written`` for a quota the operator created (a profile's root, a reserved
        quota): kept unless the watch brought it first."""
        if body is not None and quota_key(body) not in self.quotas:
            self.quotas[quota_key(body)] = read_quota(body).quota

    def keep_written_profile(self, body: Mapping[str, Any] | None) -> None:
        """``keep_written`` for a profile: its labels as the write left them (what the profile
        controller checks before labelling); the watch brings the profile itself to
        ``on_profile``."""
        if body is None:
            return
        metadata = body.get("metadata") or {}
        key = (str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        if key in self.profiles:
            self.profile_labels[key] = dict(metadata.get("labels") or {})

    # -- relists: memory becomes exactly what a complete list returned ----------------------

    # Each is a coroutine: a reader awaits its kind's relist, so the comparison of a large
    # kind can yield (the pods': 100,000 keys held the loop 0.15 s as one stretch).

    async def forget_quotas_except(self, listed: set[ObjectKey]) -> None:
        for namespace, name in [key for key in self.quotas if key not in listed]:
            self.on_quota_deleted({"metadata": {"namespace": namespace, "name": name}})

    async def forget_pods_except(self, listed: set[ObjectKey]) -> None:
        """The pods held that ``listed`` lacks, found and then deleted a slice at a time (no watch
        event of pods comes in between: their reader is the one awaiting this)."""
        held, gone = list(self.engine.pods), list[str]()
        for start in range(0, len(held), FORGET_CHUNK):
            chunk = held[start : start + FORGET_CHUNK]
            gone.extend(key for key in chunk if tuple(key.split("/", 1)) not in listed)
            await asyncio.sleep(0)
        for start in range(0, len(gone), FORGET_CHUNK):  # a relist after a mass deletion
            for key in gone[start : start + FORGET_CHUNK]:
                namespace, name = key.split("/", 1)
                self.on_pod_deleted({"metadata": {"namespace": namespace, "name": name}})
            await asyncio.sleep(0)
        self._forget_problems("Pod ", listed)

    async def forget_nodes_except(self, listed: set[ObjectKey]) -> None:
        names = {name for _, name in listed}
        for name in [name for name in self.engine.nodes if name not in names]:
            self.on_node_deleted({"metadata": {"name": name}})
        self._forget_problems("Node ", {("", name) for name in names})

    async def forget_profiles_except(self, listed: set[ObjectKey]) -> None:
        for namespace, name in [key for key in self.profiles if key not in listed]:
            self.on_profile_deleted({"metadata": {"namespace": namespace, "name": name}})
        self._forget_problems("ElasticQuotaProfile ", listed)

    def _forget_problems(self, prefix: str, listed: set[ObjectKey]) -> None:
        """Parse problems of objects of one kind the list did not return (refs ``Kind ns/name``)."""
        for ref in [ref for ref in self.parse_problems if ref.startswith(prefix)]:
            namespace, _, name = ref[len(prefix) :].partition("/")
            if (namespace, name) not in listed:
                del self.parse_problems[ref]

    def population(self) -> int:
        """How many objects of the cluster are in memory (quotas, pods, nodes, profiles)."""
        return (
            len(self.quotas) + len(self.engine.pods) + len(self.engine.nodes) + len(self.profiles)
        )

    def mark_synced(self) -> None:
        if not self.synced.is_set():
            logger.info(
                "initial listing done: %d quotas, %d pods, %d nodes, %d profiles",
                len(self.quotas),
                len(self.engine.pods),
                len(self.engine.nodes),
                len(self.profiles),
            )
            self.synced.set()
            self._trees_changed()
            self.profiles_changed.set()

    # -- internals ------------------------------------------------------------------------------

    def _record(self, ref: str, problems: list[Problem]) -> None:
        if problems:
            self.parse_problems[ref] = problems
        else:
            self.parse_problems.pop(ref, None)

    def _trees_changed(self) -> None:
        self.trees_changed.set()

    def take_changed_quotas(self) -> set[str]:
        """The names of the quota objects seen since the last call (and forget them)."""
        changed, self.changed_quotas = self.changed_quotas, set()
        return changed

    def _pod_moved(self, key: str, before: str | None) -> list[asyncio.Event]:
        """The wake-ups of the loops of the trees a changed pod counted in ``before`` and counts in
        now (none while the topology awaits the rebuild that wakes them all); their clocks start."""
        now, after = time.monotonic(), self.engine.tree_of_pod(key)
        trees = [tree_id for tree_id in {before, after} if tree_id is not None]
        if self.synced.is_set():
            for tree_id in trees:
                self.pod_event_at.setdefault(tree_id, now)
        return [self.tree_wakes[tree_id] for tree_id in trees if tree_id in self.tree_wakes]

    def ready(self, now: float, grace: float = READY_GRACE) -> bool:
        """Synced, and no kind unseen for longer than ``grace``: decisions made now are right."""
        return self.synced.is_set() and not self.blind(now, grace)

    def blind(self, now: float, grace: float = READY_GRACE) -> list[str]:
        """Kinds whose reader has been disconnected, or whose watch is known dead (a frozen
        connection), for longer than ``grace`` seconds (monotonic ``now``): changes of these
        kinds are not reaching memory."""
        return sorted(
            kind
            for kind, health in self.readers.items()
            if (since := health.blind_since(now)) is not None and now - since > grace
        )

    def problems(self) -> list[Problem]:
        """Every current problem: parsing, and the engine's structural ones."""
        self.engine.tree_ids()  # brings the topology (and its problems) up to date
        found = [problem for problems in self.parse_problems.values() for problem in problems]
        return found + self.engine.problems()
