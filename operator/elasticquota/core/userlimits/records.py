"""What user limits take in and give out: the pod as they see it, and their answers.

``LimitedPod`` is what the ledger (``core.userlimits.ledger``) counts; ``UserLimitVerdict`` with
its ``LimitRefusal`` list is the admission check's answer, ``OverUse`` a limit lowered below the
usage (reported, never evicted), ``SubjectUsage`` one line of the usage view (``plan``, metrics).
Plain frozen values, with the messages the webhook and the reports show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from elasticquota.core.quantities.quantity import format_quantity
from elasticquota.core.quantities.resources import ResourceList, format_resource_list
from elasticquota.core.userlimits.book import QuotaPath
from elasticquota.core.userlimits.limits import PODS, LimitEntry

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
            f"{who} at quota {self.quota}: {unit}: requested "
            f"{format_quantity(unit, self.requested)}, used {format_quantity(unit, self.used)} "
            f"of limit {format_quantity(unit, self.limit)} "
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
            held = "pods of new applications are held back"
        else:
            amounts = (
                f"used {format_quantity(self.resource, self.used)}, "
                f"limit {format_quantity(self.resource, self.limit)}"
            )
            held = f"new pods requesting {self.resource} are held back"
        return (
            f"{self.kind} {self.name} at quota {self.quota} is over its {self.resource} limit: "
            f"{amounts} (user limit {self.limit_name}); {held}, none is evicted"
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


#: ``plan -o json``'s ``users`` and ``groups``: name -> quota -> ``SubjectUsage.to_json``.
UsageDocument = dict[str, dict[str, dict[str, dict[str, Any]]]]


def usage_document(lines: Iterable[SubjectUsage]) -> UsageDocument:
    """``{"users": {user: {quota: ...}}, "groups": {group: {quota: ...}}}`` of usage lines."""
    document: UsageDocument = {"users": {}, "groups": {}}
    for line in lines:
        section = document["users" if line.kind == "user" else "groups"]
        section.setdefault(line.name, {})[line.quota] = line.to_json()
    return document
