"""Usage and running applications per user and per tracked group at every quota, and admission.

``UserLimitLedger`` is updated pod by pod: ``add`` when a pod starts counting in its quota's
``used``, ``remove`` when it stops. Each event costs O(path length x resources); nothing grows with
the number of pods. A configuration change (``replace_book``) resolves the tracked group again once
per distinct (path, groups) among the counted pods and moves only the pods whose group changed, as a
recomputation from scratch would (YuniKorn keeps an application's first group instead). Usage is
hierarchical: a pod counts for its user,
and for its tracked group if it has one, at every quota from its own to the root. An application
runs for a subject at a quota while at least one of its pods counts there.

``check`` is the admission rule (semantics §6): a pod may start when, at every quota on its path,
for its user and its tracked group, (a) for every resource the limit in force lists and the pod
requests, used + request <= limit, and (b) when the pod starts an application that is not yet
running there, running + 1 <= maxapplications (0: unlimited). Exactly at the limit is allowed;
stopping is never refused; a limit lowered below usage holds back new pods and is listed by
``over_use``, it never evicts anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from elasticquota.core.quantity import format_units
from elasticquota.core.resources import ResourceList, format_resource_list
from elasticquota.core.userlimits.book import LimitBook, QuotaPath
from elasticquota.core.userlimits.config import PODS, WILDCARD, LimitEntry

Kind = Literal["user", "group"]
#: Who a figure is about: ("user", name) or ("group", name); the catch-all group is "*".
Subject = tuple[Kind, str]
APPLICATIONS: Final = "applications"


@dataclass(frozen=True, slots=True)
class LimitedPod:
    """A pod as user limits see it.

    ``key`` is unique among pods (``namespace/name``); ``path`` runs from the pod's quota to the
    tree's root; ``application`` is the application key (``identity.application_id``; empty:
    the pod is an application of its own); ``request`` is the pod's effective request in engine
    units, the same figure its quota's ``used`` counts."""

    key: str
    path: QuotaPath
    user: str
    groups: tuple[str, ...] = ()
    application: str = ""
    request: Mapping[str, int] = field(default_factory=dict)

    @property
    def app(self) -> str:
        return self.application or f"pod:{self.key}"

    def counted(self) -> ResourceList:
        """What the pod adds to its subjects' usage: its non-zero requests and 1 ``pods``."""
        counted = {name: value for name, value in self.request.items() if value}
        counted[PODS] = counted.get(PODS, 0) + 1
        return counted


@dataclass(frozen=True, slots=True)
class LimitRefusal:
    """One limit a pod would break: whose, where, on what, and the numbers (engine units)."""

    kind: Kind
    name: str
    quota: str
    resource: str
    requested: int
    used: int
    limit: int
    limit_name: str

    @property
    def message(self) -> str:
        who = f"{self.kind} {self.name}"
        if self.resource == APPLICATIONS:
            return (
                f"{who} at quota {self.quota}: applications: a new application would make "
                f"{self.used + self.requested} running, limit {self.limit} "
                f"(user limit {self.limit_name})"
            )
        unit = self.resource
        return (
            f"{who} at quota {self.quota}: {unit}: requested {format_units(unit, self.requested)}, "
            f"used {format_units(unit, self.used)} of limit {format_units(unit, self.limit)} "
            f"(user limit {self.limit_name})"
        )


@dataclass(frozen=True, slots=True)
class UserLimitVerdict:
    """The answer of ``check``: allowed when no limit refuses; refusals leaf to root, user first."""

    user: str
    group: str | None
    refusals: tuple[LimitRefusal, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.refusals

    @property
    def reason(self) -> str:
        return self.refusals[0].message if self.refusals else ""


@dataclass(frozen=True, slots=True)
class OverUse:
    """Usage above a limit in force (a limit lowered after the fact): reported, never evicted."""

    kind: Kind
    name: str
    quota: str
    resource: str
    used: int
    limit: int
    limit_name: str

    @property
    def message(self) -> str:
        if self.resource == APPLICATIONS:
            amounts = f"{self.used} running, limit {self.limit}"
        else:
            amounts = (
                f"used {format_units(self.resource, self.used)}, "
                f"limit {format_units(self.resource, self.limit)}"
            )
        return (
            f"{self.kind} {self.name} at quota {self.quota} is over its {self.resource} limit: "
            f"{amounts} (user limit {self.limit_name}); new pods are held back, none is evicted"
        )


@dataclass(frozen=True, slots=True)
class SubjectUsage:
    """One line of the usage view: a subject at a quota, its usage and the limit in force."""

    kind: Kind
    name: str
    quota: str
    used: ResourceList
    applications: frozenset[str]
    limit: LimitEntry | None
    limit_name: str | None

    def to_json(self) -> dict[str, Any]:
        """The ``plan -o json`` contract: null where no limit applies (0 and {} included)."""
        limit = self.limit
        return {
            "used": format_resource_list(self.used),
            "applications": len(self.applications),
            "maxResources": (
                format_resource_list(limit.max_resources)
                if limit is not None and limit.max_resources
                else None
            ),
            "maxApplications": (
                limit.max_applications if limit is not None and limit.max_applications else None
            ),
            "limit": self.limit_name,
        }


@dataclass(slots=True)
class _Counted:
    pod: LimitedPod
    group: str | None
    counted: ResourceList


class UserLimitLedger:
    """Incremental usage per subject and quota, the limit book, and the admission check."""

    def __init__(self, book: LimitBook | None = None) -> None:
        self._book = book or LimitBook()
        self._pods: dict[str, _Counted] = {}
        self._used: dict[Subject, dict[str, ResourceList]] = {}
        #: subject → quota → application → number of its pods counted there.
        self._apps: dict[Subject, dict[str, dict[str, int]]] = {}
        #: Counted pods by what decides their group: (path, set of groups) → keys.
        self._classes: dict[tuple[QuotaPath, frozenset[str]], dict[str, None]] = {}

    @classmethod
    def from_pods(cls, book: LimitBook, pods: Iterable[LimitedPod]) -> UserLimitLedger:
        ledger = cls(book)
        for pod in pods:
            ledger.add(pod)
        return ledger

    @property
    def book(self) -> LimitBook:
        return self._book

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def pods(self) -> list[LimitedPod]:
        return [entry.pod for entry in self._pods.values()]

    # -- events ----------------------------------------------------------------------------------

    def add(self, pod: LimitedPod) -> None:
        """The pod counts from now on (an already counted key is replaced). Never refused."""
        if pod.key in self._pods:
            self.remove(pod.key)
        group = self._book.tracked_group(pod.path, pod.groups)
        entry = _Counted(pod, group, pod.counted())
        self._pods[pod.key] = entry
        self._classes.setdefault(_group_class(pod), {})[pod.key] = None
        for subject in _subjects(pod.user, group):
            used = self._used.setdefault(subject, {})
            apps = self._apps.setdefault(subject, {})
            for quota in _levels(pod.path):
                at = used.setdefault(quota, {})
                for name, value in entry.counted.items():
                    at[name] = at.get(name, 0) + value
                running = apps.setdefault(quota, {})
                running[pod.app] = running.get(pod.app, 0) + 1

    def remove(self, key: str) -> LimitedPod | None:
        """The pod no longer counts (finished, deleted, moved). Unknown keys are ignored."""
        entry = self._pods.pop(key, None)
        if entry is None:
            return None
        pod = entry.pod
        members = self._classes[_group_class(pod)]
        del members[key]
        if not members:
            del self._classes[_group_class(pod)]
        for subject in _subjects(pod.user, entry.group):
            used = self._used[subject]
            apps = self._apps[subject]
            for quota in _levels(pod.path):
                running = apps[quota]
                running[pod.app] -= 1
                if not running[pod.app]:
                    del running[pod.app]
                if not running:
                    del apps[quota]
                    del used[quota]
                    continue
                at = used[quota]
                for name, value in entry.counted.items():
                    at[name] -= value
                    if not at[name]:
                        del at[name]
            if not apps:
                del self._apps[subject]
                del self._used[subject]
        return pod

    def replace_book(self, book: LimitBook) -> None:
        """New limits: later checks use them, and counted pods whose tracked group changes move
        their usage to the new group (which may then be over its limit: reported only)."""
        self._book = book
        for (path, groups), keys in list(self._classes.items()):
            group = book.tracked_group(path, groups)
            if group == self._pods[next(iter(keys))].group:
                continue
            for key in list(keys):
                pod = self._pods[key].pod
                self.remove(key)
                self.add(pod)

    # -- admission -------------------------------------------------------------------------------

    def check(self, pod: LimitedPod) -> UserLimitVerdict:
        """May ``pod`` start counting? An already counted pod changes nothing and is allowed."""
        group = self._book.tracked_group(pod.path, pod.groups)
        if pod.key in self._pods:
            return UserLimitVerdict(pod.user, self._pods[pod.key].group)
        counted = pod.counted()
        refusals: list[LimitRefusal] = []
        for quota in _levels(pod.path):
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
        used = self._used.get(subject, {}).get(quota, {})
        refusals = [
            LimitRefusal(
                kind, name, quota, resource, counted[resource], used.get(resource, 0), limit, label
            )
            for resource, limit in sorted(entry.max_resources.items())
            if counted.get(resource, 0) > 0 and used.get(resource, 0) + counted[resource] > limit
        ]
        if entry.max_applications:
            running = self._apps.get(subject, {}).get(quota, {})
            if pod.app not in running and len(running) + 1 > entry.max_applications:
                refusals.append(
                    LimitRefusal(
                        kind,
                        name,
                        quota,
                        APPLICATIONS,
                        1,
                        len(running),
                        entry.max_applications,
                        label,
                    )
                )
        return refusals

    # -- reading ---------------------------------------------------------------------------------

    def used(self, kind: Kind, name: str, quota: str) -> ResourceList:
        return dict(self._used.get((kind, name), {}).get(quota, {}))

    def running_applications(self, kind: Kind, name: str, quota: str) -> frozenset[str]:
        return frozenset(self._apps.get((kind, name), {}).get(quota, {}))

    def tracked_group(self, key: str) -> str | None:
        """The group a counted pod's usage goes to (None: not counted, or no group)."""
        entry = self._pods.get(key)
        return None if entry is None else entry.group

    def snapshot(self) -> dict[Subject, dict[str, tuple[ResourceList, frozenset[str]]]]:
        """Every subject's usage and running applications per quota (a copy)."""
        return {
            subject: {
                quota: (dict(used), frozenset(self._apps[subject][quota]))
                for quota, used in quotas.items()
            }
            for subject, quotas in self._used.items()
        }

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
        for (kind, name), quotas in self._used.items():
            for quota, used in quotas.items():
                entry, label = self.limit_in_force(kind, name, quota)
                if entry is None or label is None:
                    continue
                for resource, limit in sorted(entry.max_resources.items()):
                    if used.get(resource, 0) > limit:
                        found.append(
                            OverUse(kind, name, quota, resource, used[resource], limit, label)
                        )
                running = len(self._apps[(kind, name)][quota])
                if entry.max_applications and running > entry.max_applications:
                    found.append(
                        OverUse(
                            kind, name, quota, APPLICATIONS, running, entry.max_applications, label
                        )
                    )
        return sorted(found, key=lambda item: (item.kind, item.name, item.quota, item.resource))

    def usage(self) -> list[SubjectUsage]:
        """Every subject at every quota where it has usage or a named limit, sorted."""
        keys: set[tuple[Kind, str, str]] = {
            (kind, name, quota) for (kind, name), quotas in self._used.items() for quota in quotas
        }
        for quota, limits in self._book.quotas.items():
            keys.update(("user", user, quota) for user in limits.users)
            keys.update(("group", group, quota) for group in limits.groups)
        lines = []
        for kind, name, quota in sorted(keys):
            entry, label = self.limit_in_force(kind, name, quota)
            lines.append(
                SubjectUsage(
                    kind,
                    name,
                    quota,
                    self.used(kind, name, quota),
                    self.running_applications(kind, name, quota),
                    entry,
                    label,
                )
            )
        return lines

    def usage_document(self) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
        """``{"users": {user: {quota: ...}}, "groups": {group: {quota: ...}}}`` for ``plan``."""
        document: dict[str, dict[str, dict[str, dict[str, Any]]]] = {"users": {}, "groups": {}}
        for line in self.usage():
            section = document["users" if line.kind == "user" else "groups"]
            section.setdefault(line.name, {})[line.quota] = line.to_json()
        return document


def _subjects(user: str, group: str | None) -> list[Subject]:
    return [("user", user)] if group is None else [("user", user), ("group", group)]


def _levels(path: QuotaPath) -> Iterable[str]:
    """The path's quotas, each once (a malformed path must not count a pod twice)."""
    return dict.fromkeys(path)


def _group_class(pod: LimitedPod) -> tuple[QuotaPath, frozenset[str]]:
    return pod.path, frozenset(pod.groups)
