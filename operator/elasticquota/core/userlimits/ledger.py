"""Usage and running applications per user and per tracked group at every quota, and admission.

``UserLimitLedger`` is updated pod by pod: ``add`` when a pod starts counting in its quota's
``used``, ``remove`` when it stops. Each event costs O(path length x resources); nothing grows with
the number of pods. Its figures live in copy-on-write maps (``core.generic.cowmap``): ``freeze``
gives a snapshot a ``LedgerView`` that never changes and ``fork`` a rebuild its own copy, both in
O(buckets); ``LedgerView.overlay`` counts pods on top of a view without changing it (gating).

A configuration change (``replace_book``) resolves the tracked group again once per distinct
(path, groups) among the counted pods and looks at the pods only when some group changed, moving
those, as a recomputation from scratch would (YuniKorn keeps an application's first group
instead). Usage is hierarchical: a pod counts for its user, and for its tracked group if it has
one, at every quota from its own to the root. An application runs for a subject at a quota while
at least one of its pods counts there.

``check`` is the admission rule (semantics §6): a pod may start when, at every quota on its path,
for its user and its tracked group, (a) for every resource the limit in force lists and the pod
requests, used + request <= limit, and (b) when the pod starts an application that is not yet
running there, running + 1 <= maxapplications (0: unlimited). Exactly at the limit is allowed;
stopping is never refused; a limit lowered below usage holds back new pods and is listed by
``over_use``, it never evicts anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from elasticquota.core.generic.cowmap import CowMap
from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.userlimits.book import LimitBook
from elasticquota.core.userlimits.counting import (
    SEP,
    Counted,
    Layered,
    PodClass,
    at_key,
    count_pod,
    path_levels,
    pod_class_key,
)
from elasticquota.core.userlimits.limits import WILDCARD, LimitEntry
from elasticquota.core.userlimits.records import (
    APPLICATIONS,
    Kind,
    LimitedPod,
    LimitRefusal,
    OverUse,
    Subject,
    SubjectUsage,
    UsageDocument,
    UserLimitVerdict,
    usage_document,
)

__all__ = ["LedgerOverlay", "LedgerView", "UserLimitLedger"]


class LedgerView:
    """The ledger's figures and the admission check, read-only.

    The state is held in four string-keyed maps: counted pods by key; usage per subject and
    quota (``kind NUL name NUL quota``, values never changed in place); the number of running
    applications per subject and quota; pods per subject, quota and application. The live
    ledger keeps them as copy-on-write maps, so that ``UserLimitLedger.freeze`` hands a snapshot
    a view that never changes in O(buckets), whatever the number of pods."""

    def __init__(
        self,
        book: LimitBook,
        pods: Mapping[str, Counted],
        used: Mapping[str, ResourceList],
        running: Mapping[str, int],
        apps: Mapping[str, int],
    ) -> None:
        self._book = book
        self._pods = pods
        self._used = used
        self._running = running
        self._apps = apps

    @property
    def book(self) -> LimitBook:
        return self._book

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def pods(self) -> list[LimitedPod]:
        return [entry.pod for entry in self._pods.values()]

    def overlay(self) -> LedgerOverlay:
        """A scratch ledger over this one: ``add`` changes the overlay only (for a pass that
        releases several pods and must count each one before checking the next)."""
        return LedgerOverlay(self)

    # -- admission -------------------------------------------------------------------------------

    def check(self, pod: LimitedPod) -> UserLimitVerdict:
        """May ``pod`` start counting? An already counted pod changes nothing and is allowed."""
        group = self._book.tracked_group(pod.path, pod.groups)
        known = self._pods.get(pod.key)
        if known is not None:
            return UserLimitVerdict(pod.user, known.group)
        counted = pod.counted()
        refusals: list[LimitRefusal] = []
        for quota in path_levels(pod.path):
            entry, through = self._book.user_limit(quota, pod.user)
            refusals.extend(self._refusals(("user", pod.user), quota, entry, through, pod, counted))
            if group is not None:
                entry = self._book.group_limit(quota, group)
                refusals.extend(
                    self._refusals(("group", group), quota, entry, group == WILDCARD, pod, counted)
                )
        return UserLimitVerdict(pod.user, group, tuple(refusals))

    def _refusals(
        self,
        subject: Subject,
        quota: str,
        entry: LimitEntry | None,
        through_wildcard: bool,
        pod: LimitedPod,
        counted: Mapping[str, int],
    ) -> list[LimitRefusal]:
        if entry is None:
            return []
        kind, name = subject
        label = entry.report_name(through_wildcard)
        at = at_key(kind, name, quota)
        used = self._used.get(at) or {}
        refusals = [
            LimitRefusal(
                kind, name, quota, resource, counted[resource], used.get(resource, 0), limit, label
            )
            for resource, limit in sorted(entry.max_resources.items())
            if counted.get(resource, 0) > 0 and used.get(resource, 0) + counted[resource] > limit
        ]
        if entry.max_applications:
            running = self._running.get(at) or 0
            if f"{at}{SEP}{pod.app}" not in self._apps and running + 1 > entry.max_applications:
                refusals.append(
                    LimitRefusal(
                        kind, name, quota, APPLICATIONS, 1, running, entry.max_applications, label
                    )
                )
        return refusals

    # -- reading ---------------------------------------------------------------------------------

    def used_at(self, at: str) -> ResourceList:
        """The usage stored under ``at`` (``counting.at_key``), not a copy: never change it."""
        return self._used.get(at) or {}

    def running_at(self, at: str) -> int:
        """The applications running under ``at``."""
        return self._running.get(at) or 0

    def runs(self, app_key: str) -> bool:
        """Whether the application key (``at`` NUL application) has a counted pod."""
        return app_key in self._apps

    def used(self, kind: Kind, name: str, quota: str) -> ResourceList:
        return dict(self._used.get(at_key(kind, name, quota)) or {})

    def running_applications(self, kind: Kind, name: str, quota: str) -> frozenset[str]:
        """The applications running for a subject at a quota (a scan: for reports, not passes)."""
        prefix = at_key(kind, name, quota) + SEP
        return frozenset(key[len(prefix) :] for key in self._apps if key.startswith(prefix))

    def tracked_group(self, key: str) -> str | None:
        """The group a counted pod's usage goes to (None: not counted, or no group)."""
        entry = self._pods.get(key)
        return None if entry is None else entry.group

    def snapshot(self) -> dict[Subject, dict[str, tuple[ResourceList, frozenset[str]]]]:
        """Every subject's usage and running applications per quota (a copy)."""
        running: dict[str, set[str]] = {}
        for key in self._apps:
            at, _, app = key.rpartition(SEP)
            running.setdefault(at, set()).add(app)
        result: dict[Subject, dict[str, tuple[ResourceList, frozenset[str]]]] = {}
        for at, used in self._used.items():
            kind, name, quota = at.split(SEP)
            subject: Subject = ("user" if kind == "user" else "group", name)
            result.setdefault(subject, {})[quota] = (dict(used), frozenset(running.get(at, ())))
        return result

    def limit_in_force(
        self, kind: Kind, name: str, quota: str
    ) -> tuple[LimitEntry | None, str | None]:
        """The object limiting a subject at a quota and its ``limit`` name for reports."""
        if kind == "user":
            entry, through = self._book.user_limit(quota, name)
        else:
            entry, through = self._book.group_limit(quota, name), name == WILDCARD
        return entry, None if entry is None else entry.report_name(through)

    def over_use(self) -> list[OverUse]:
        """Every subject and quota whose usage is above the limit in force, sorted."""
        found: list[OverUse] = []
        for (kind, name), quotas in self.snapshot().items():
            for quota, (used, apps) in quotas.items():
                entry, label = self.limit_in_force(kind, name, quota)
                if entry is None or label is None:
                    continue
                for resource, limit in sorted(entry.max_resources.items()):
                    if used.get(resource, 0) > limit:
                        found.append(
                            OverUse(kind, name, quota, resource, used[resource], limit, label)
                        )
                if entry.max_applications and len(apps) > entry.max_applications:
                    found.append(
                        OverUse(
                            kind,
                            name,
                            quota,
                            APPLICATIONS,
                            len(apps),
                            entry.max_applications,
                            label,
                        )
                    )
        return sorted(found, key=lambda item: (item.kind, item.name, item.quota, item.resource))

    def usage(self) -> list[SubjectUsage]:
        """Every subject at every quota where it has usage or a named limit, sorted."""
        figures = self.snapshot()
        keys: set[tuple[Kind, str, str]] = {
            (kind, name, quota) for (kind, name), quotas in figures.items() for quota in quotas
        }
        for quota, limits in self._book.quotas.items():
            keys.update(("user", user, quota) for user in limits.users)
            keys.update(("group", group, quota) for group in limits.groups)
        lines = []
        for kind, name, quota in sorted(keys):
            entry, label = self.limit_in_force(kind, name, quota)
            used, apps = figures.get((kind, name), {}).get(quota, ({}, frozenset()))
            lines.append(SubjectUsage(kind, name, quota, used, apps, entry, label))
        return lines

    def usage_document(self) -> UsageDocument:
        """``{"users": {user: {quota: ...}}, "groups": {group: {quota: ...}}}`` for ``plan``."""
        return usage_document(self.usage())


class UserLimitLedger(LedgerView):
    """Incremental usage per subject and quota, the limit book, and the admission check."""

    def __init__(self, book: LimitBook | None = None) -> None:
        self._pods_live: CowMap[Counted] = CowMap()
        self._used_live: CowMap[ResourceList] = CowMap()
        self._running_live: CowMap[int] = CowMap()
        self._apps_live: CowMap[int] = CowMap()
        super().__init__(
            book or LimitBook(),
            self._pods_live,
            self._used_live,
            self._running_live,
            self._apps_live,
        )
        self._classes: CowMap[PodClass] = CowMap()

    @classmethod
    def from_pods(cls, book: LimitBook, pods: Iterable[LimitedPod]) -> UserLimitLedger:
        ledger = cls(book)
        for pod in pods:
            ledger.add(pod)
        return ledger

    def freeze(self) -> LedgerView:
        """The ledger as it is now, for good: O(buckets), later events leave it alone."""
        return LedgerView(
            self._book,
            self._pods_live.freeze(),
            self._used_live.freeze(),
            self._running_live.freeze(),
            self._apps_live.freeze(),
        )

    def fork(self) -> UserLimitLedger:
        """An independent ledger with the same content, O(buckets) (for a rebuild that runs off
        the event loop while this one keeps changing)."""
        forked = UserLimitLedger(self._book)
        forked._pods = forked._pods_live = self._pods_live.fork()
        forked._used = forked._used_live = self._used_live.fork()
        forked._running = forked._running_live = self._running_live.fork()
        forked._apps = forked._apps_live = self._apps_live.fork()
        forked._classes = self._classes.fork()
        return forked

    # -- events ----------------------------------------------------------------------------------

    def add(self, pod: LimitedPod) -> None:
        """The pod counts from now on (an already counted key is replaced). Never refused."""
        if pod.key in self._pods_live:
            self.remove(pod.key)
        group = self._book.tracked_group(pod.path, pod.groups)
        entry = Counted(pod, group, pod.counted())
        self._pods_live[pod.key] = entry
        key = pod_class_key(pod)
        known = self._classes.get(key)
        self._classes[key] = (
            pod.path,
            frozenset(pod.groups),
            group,
            1 + (known[3] if known else 0),
        )
        count_pod(entry, +1, self._used_live, self._running_live, self._apps_live)

    def remove(self, key: str) -> LimitedPod | None:
        """The pod no longer counts (finished, deleted, moved). Unknown keys are ignored."""
        entry = self._pods_live.pop(key)
        if entry is None:
            return None
        class_key = pod_class_key(entry.pod)
        path, groups, group, count = self._classes[class_key]
        if count > 1:
            self._classes[class_key] = (path, groups, group, count - 1)
        else:
            del self._classes[class_key]
        count_pod(entry, -1, self._used_live, self._running_live, self._apps_live)
        return entry.pod

    def replace_book(self, book: LimitBook) -> None:
        """New limits: later checks use them, and counted pods whose tracked group changes move
        their usage to the new group (which may then be over its limit: reported only).

        O(classes) when no group changes (one resolution per distinct path and groups); the
        counted pods are looked at only when some class's group changed."""
        self._book = book
        moved = {
            key
            for key, (path, groups, group, _) in self._classes.items()
            if book.tracked_group(path, groups) != group
        }
        if not moved:
            return
        for entry in list(self._pods_live.values()):
            if pod_class_key(entry.pod) in moved:
                self.remove(entry.pod.key)
                self.add(entry.pod)


class LedgerOverlay(LedgerView):
    """A ledger view plus pods added on top, in plain dicts; the view below is never changed."""

    def __init__(self, base: LedgerView) -> None:
        super().__init__(
            base.book,
            Layered(base._pods),
            Layered(base._used),
            Layered(base._running),
            Layered(base._apps),
        )

    def add(self, pod: LimitedPod) -> None:
        """Count ``pod`` in the overlay (a pod already counted below is left as it is)."""
        if pod.key in self._pods:
            return
        entry = Counted(pod, self._book.tracked_group(pod.path, pod.groups), pod.counted())
        assert isinstance(self._pods, Layered)
        assert isinstance(self._used, Layered)
        assert isinstance(self._running, Layered)
        assert isinstance(self._apps, Layered)
        self._pods[pod.key] = entry
        count_pod(entry, +1, self._used, self._running, self._apps)
