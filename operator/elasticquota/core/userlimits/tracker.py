"""The engine's user limits: per quota tree a limit book and a ledger, fed pod by pod.

``build_books`` reads the ``user-limits`` annotation of every quota of a topology, parsing a quota
again only when its text or its max changed since the last topology (``LimitMemo``), and checks
each tree that has limits between levels (``book.check_hierarchy``). Every broken limit object is
a ``Problem`` on its quota naming the limit and the rule; only that object is dropped.

``UserLimitTracker`` keeps one ``UserLimitLedger`` per tree that has a limit (a tree without any
``user-limits`` annotation has no ledger: its pods cost nothing here, which is what most clusters
run). The engine tells it when a pod is placed in a quota or leaves it; only pods that count in
their quota's ``used`` (bound to a node, not finished) count here, at every quota from theirs to
the tree's top. Pods of the reserved quotas (system, default) are not tracked: nothing can limit
them. Each event costs O(path x resources) in a limited tree, O(1) elsewhere. A topology change
works on a fork of the tracker (O(buckets), off the event loop, in ``core.solve.rebuild``): the new
books replace the old ones and only the pods the rebuild moved, whose quota's path changed, or whose
tree got its first limit, are counted again; a tree that lost its last limit drops its ledger.
``freeze`` gives snapshots a view that never changes, in O(buckets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from elasticquota.core.generic.cowmap import CowMap
from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.model.models import PodInfo, Problem
from elasticquota.core.model.quota import Quota
from elasticquota.core.tree.topology import Topology
from elasticquota.core.userlimits.book import LimitBook, QuotaPath, check_hierarchy
from elasticquota.core.userlimits.config import parse_quota_limits
from elasticquota.core.userlimits.identity import DEFAULT_USER
from elasticquota.core.userlimits.ledger import LedgerOverlay, LedgerView, UserLimitLedger
from elasticquota.core.userlimits.limits import LimitProblem, QuotaLimits
from elasticquota.core.userlimits.records import (
    LimitedPod,
    SubjectUsage,
    UsageDocument,
    UserLimitVerdict,
    usage_document,
)

#: Per quota name: the annotation text and max it was parsed with, and what came out.
LimitMemo = dict[str, tuple[str, frozenset[tuple[str, int]], QuotaLimits, tuple[LimitProblem, ...]]]


def build_books(
    topology: Topology, memo: LimitMemo | None = None
) -> tuple[dict[str, LimitBook], list[Problem]]:
    """Every tree's limit book (trees without any limit get none) and the problems found.

    ``memo`` (changed in place) keeps each quota's parse for the next topology; it is left
    holding exactly the current quotas that carry the annotation."""
    memo = memo if memo is not None else {}
    parsed: dict[str, QuotaLimits] = {}
    problems: list[tuple[str, LimitProblem]] = []
    for name, spec in topology.quotas.items():
        if spec.user_limits is None or not spec.user_limits.strip():
            continue
        limits, found = _parse(spec, memo)
        parsed[name] = limits
        problems.extend((name, problem) for problem in found)
    for name in [name for name in memo if name not in parsed]:
        del memo[name]
    limited = {topology.tree_of[name] for name in parsed if name in topology.tree_of}
    members: dict[str, dict[str, QuotaLimits]] = {tree: {} for tree in limited}
    parents: dict[str, str | None] = {}
    for name, tree in topology.tree_of.items():
        if tree in members:
            members[tree][name] = parsed.get(name) or QuotaLimits.of(name, ())
            parent = topology.quotas[name].parent
            parents[name] = None if parent == ROOT_QUOTA else parent
    books: dict[str, LimitBook] = {}
    for tree, tree_limits in members.items():
        checked, dropped = check_hierarchy(tree_limits, parents)
        books[tree] = LimitBook(checked)
        problems.extend((problem.quota, problem) for problem in dropped)
    return books, [
        Problem(topology.quotas[name].ref, problem.message)
        for name, problem in sorted(problems, key=lambda item: item[0])
    ]


def _parse(spec: Quota, memo: LimitMemo) -> tuple[QuotaLimits, tuple[LimitProblem, ...]]:
    text = spec.user_limits or ""
    maximum = frozenset(spec.max.items())
    remembered = memo.get(spec.name)
    if remembered is not None and remembered[0] == text and remembered[1] == maximum:
        return remembered[2], remembered[3]
    limits, found = parse_quota_limits(spec.name, text, spec.max)
    memo[spec.name] = (text, maximum, limits, tuple(found))
    return limits, tuple(found)


class _Paths:
    """Quota paths (the quota, its parent, ... the tree's top quota), computed once each."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._paths: dict[str, QuotaPath] = {}

    def tree_of(self, quota: str) -> str | None:
        return self.topology.tree_of.get(quota)

    def __call__(self, quota: str) -> QuotaPath:
        path = self._paths.get(quota)
        if path is None:
            path = self._paths[quota] = tuple(self.topology.path_to_root(quota))
        return path


def limited_pod(
    pod: PodInfo, path: QuotaPath, default_user: str, key: str | None = None
) -> LimitedPod:
    """The pod as the ledger sees it: its identity (the default user without one), its
    application and its whole effective request (a limit may name a resource its quota's max
    does not list)."""
    return LimitedPod(
        key=key or pod.key,
        path=path,
        user=pod.user or default_user,
        groups=pod.groups,
        application=pod.application_key,
        request=pod.requests,
    )


class UserLimitsView:
    """User limits as of one moment: every tree's ledger, read-only (a ``Snapshot`` field)."""

    def __init__(
        self, paths: _Paths | None, ledgers: Mapping[str, LedgerView], default_user: str
    ) -> None:
        self._paths = paths
        self._ledgers = ledgers
        self.default_user = default_user

    @property
    def limited(self) -> bool:
        """Whether any tree has a user or group limit at all."""
        return any(ledger.book.quotas for ledger in self._ledgers.values())

    def ledger(self, tree: str) -> LedgerView | None:
        return self._ledgers.get(tree)

    def ledger_of(self, quota: str) -> tuple[str, LedgerView, QuotaPath] | None:
        """The tree of ``quota``, its ledger and the quota's path; None when no ledger covers
        the quota."""
        if self._paths is None:
            return None
        tree = self._paths.tree_of(quota)
        ledger = None if tree is None else self._ledgers.get(tree)
        if tree is None or ledger is None:
            return None
        return tree, ledger, self._paths(quota)

    def same_limits(self, other: UserLimitsView) -> bool:
        """Pods are counted alike in both: the same topology's paths, the same limit books."""
        books = {tree: ledger.book for tree, ledger in self._ledgers.items()}
        others = {tree: ledger.book for tree, ledger in other._ledgers.items()}
        return (
            self._paths is other._paths
            and books.keys() == others.keys()
            and all(books[tree] is others[tree] for tree in books)
        )

    def check(self, pod: PodInfo, quota: str) -> UserLimitVerdict | None:
        """Whether every user and group limit on the pod's path holds with it added; None when
        no ledger covers the quota (a reserved quota, or a tree without pods nor limits)."""
        found = self.ledger_of(quota)
        if found is None:
            return None
        _, ledger, path = found
        return ledger.check(limited_pod(pod, path, self.default_user))

    def overlay(self) -> UserLimitsOverlay:
        return UserLimitsOverlay(self)

    def usage(self) -> list[SubjectUsage]:
        """Every tree's usage lines (quota names are unique across trees), sorted."""
        lines = [line for ledger in self._ledgers.values() for line in ledger.usage()]
        return sorted(lines, key=lambda line: (line.kind, line.name, line.quota))

    def usage_by_tree(self) -> list[tuple[str, list[SubjectUsage]]]:
        """Each tree's usage lines, by tree id (the metrics label them with their tree)."""
        return [(tree, self._ledgers[tree].usage()) for tree in sorted(self._ledgers)]

    def usage_document(self) -> UsageDocument:
        """``plan -o json``'s ``users`` and ``groups`` over every tree."""
        return usage_document(self.usage())


#: What a snapshot carries when the engine has no user limits to say (e.g. built by hand).
NO_USER_LIMITS = UserLimitsView(None, {}, DEFAULT_USER)


class UserLimitsOverlay:
    """A view plus pods counted on top (gating: pods released in the same pass)."""

    def __init__(self, view: UserLimitsView) -> None:
        self._view = view
        self._overlays: dict[str, LedgerOverlay] = {}

    def _ledger_of(self, quota: str) -> tuple[LedgerOverlay, QuotaPath] | None:
        paths = self._view._paths
        if paths is None:
            return None
        tree = paths.tree_of(quota)
        if tree is None:
            return None
        overlay = self._overlays.get(tree)
        if overlay is None:
            base = self._view.ledger(tree)
            if base is None:
                return None
            overlay = self._overlays[tree] = base.overlay()
        return overlay, paths(quota)

    def check(self, pod: PodInfo, quota: str) -> UserLimitVerdict | None:
        found = self._ledger_of(quota)
        if found is None:
            return None
        overlay, path = found
        return overlay.check(limited_pod(pod, path, self._view.default_user))

    def add(self, pod: PodInfo, quota: str) -> None:
        found = self._ledger_of(quota)
        if found is not None:
            overlay, path = found
            overlay.add(limited_pod(pod, path, self._view.default_user))


class UserLimitTracker:
    """Per tree the limit book and the ledger of the pods that count in ``used``."""

    def __init__(
        self, paths: _Paths, books: Mapping[str, LimitBook], default_user: str = DEFAULT_USER
    ) -> None:
        self.paths = paths
        self.books = books
        self.default_user = default_user
        self._ledgers: dict[str, UserLimitLedger] = {}
        self._tree_of_pod: CowMap[str] = CowMap()

    @classmethod
    def empty(cls, default_user: str = DEFAULT_USER) -> UserLimitTracker:
        """No trees, no limits, no pods (before the first topology)."""
        return cls(_Paths(Topology()), {}, default_user)

    def fork(self) -> UserLimitTracker:
        """An independent tracker with the same content, O(buckets): a rebuild changes the fork
        off the event loop while events keep changing this one."""
        forked = UserLimitTracker(self.paths, self.books, self.default_user)
        forked._ledgers = {tree: ledger.fork() for tree, ledger in self._ledgers.items()}
        forked._tree_of_pod = self._tree_of_pod.fork()
        return forked

    def rebuilt(
        self,
        topology: Topology,
        books: Mapping[str, LimitBook],
        left: Mapping[str, Iterable[str]],
        arrived: Mapping[str, Iterable[PodInfo]],
        placed: Mapping[str, Iterable[PodInfo]],
    ) -> UserLimitTracker:
        """This tracker (a fork nobody else changes) brought to a new topology and new books.

        ``left`` / ``arrived``: the pods the rebuild moved (``Placements.left`` / ``arrived``);
        ``placed``: every quota's pods. Only the moved pods and the pods of quotas whose path
        (or tree) changed are counted again: a rebuild that moves nothing looks at no pod. The
        ledgers take the new books, moving only the pods whose tracked group changes."""
        old = self.paths.topology
        newly_limited = {tree for tree in books if tree not in self.books}
        self.paths = _Paths(topology)
        self.books = books
        self._drop_unlimited_trees()
        for tree, ledger in self._ledgers.items():
            ledger.replace_book(books[tree])
        for keys in left.values():
            for key in keys:
                self.unplace(key)
        moved = {
            quota
            for quota in topology.tree_of
            if quota in placed
            and (
                topology.tree_of[quota] in newly_limited
                or old.tree_of.get(quota) != topology.tree_of[quota]
                or tuple(old.path_to_root(quota)) != self.paths(quota)
            )
        }
        again: list[tuple[str, PodInfo]] = [
            (quota, pod) for quota, pods in arrived.items() if quota not in moved for pod in pods
        ]
        again.extend((quota, pod) for quota in moved for pod in placed[quota])
        for quota, pod in again:
            key = pod.key
            self.unplace(key)
            self.place(pod, quota, key)
        return self

    def _drop_unlimited_trees(self) -> None:
        """Ledgers of trees that have no limit any more go, with their pods' records."""
        for tree in [tree for tree in self._ledgers if tree not in self.books]:
            for pod in self._ledgers.pop(tree).pods():
                self._tree_of_pod.pop(pod.key)

    def place(self, pod: PodInfo, quota: str | None, key: str | None = None) -> None:
        """The pod is placed in ``quota``: it counts if it is bound and not finished, and its
        tree has a limit."""
        if quota is None or not pod.is_assigned:
            return
        tree = self.paths.tree_of(quota)
        book = None if tree is None else self.books.get(tree)
        if tree is None or book is None:
            return
        ledger = self._ledgers.get(tree)
        if ledger is None:
            ledger = self._ledgers[tree] = UserLimitLedger(book)
        key = key or pod.key
        ledger.add(limited_pod(pod, self.paths(quota), self.default_user, key))
        self._tree_of_pod[key] = tree

    def place_again(
        self, keys: Iterable[str], pods: Mapping[str, PodInfo], quota_of: CowMap[str]
    ) -> None:
        """These pods changed (or went) while a rebuild was computed: count each in the quota
        the new placements put it in (``quota_of``), in key order."""
        for key in sorted(keys):
            self.unplace(key)
            pod = pods.get(key)
            if pod is not None:
                self.place(pod, quota_of.get(key))

    def unplace(self, key: str) -> None:
        """The pod left its quota (changed, deleted, or about to be placed again)."""
        tree = self._tree_of_pod.pop(key)
        if tree is not None:
            self._ledgers[tree].remove(key)

    def freeze(self) -> UserLimitsView:
        """Every ledger as it is now (trees with limits but no pods get an empty one)."""
        ledgers: dict[str, LedgerView] = {
            tree: ledger.freeze() for tree, ledger in self._ledgers.items()
        }
        for tree, book in self.books.items():
            if tree not in ledgers:
                ledgers[tree] = UserLimitLedger(book)
        return UserLimitsView(self.paths, ledgers, self.default_user)
