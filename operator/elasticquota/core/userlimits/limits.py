"""The limits of one quota as values: its accepted limit objects, and the problems found.

``LimitEntry`` is one accepted YuniKorn limit object (its users, groups and maximums in engine
units), ``QuotaLimits`` all of a quota's, indexed by user and group, ``LimitProblem`` one broken
rule. Built by ``core.userlimits.config`` from the annotation, read by the book and the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from elasticquota.core.quantities.resources import ResourceList

WILDCARD: Final = "*"
#: YuniKorn's name for cpu (in the same number of cores).
VCORE: Final = "vcore"
#: A pod counts 1 of this resource, so that a pasted YuniKorn limit on ``pods`` is honoured.
PODS: Final = "pods"


@dataclass(frozen=True, slots=True)
class LimitEntry:
    """One accepted limit object: the same numbers for each user and each group it names.

    ``max_resources`` is in engine units (millicores for cpu); a resource it does not list is not
    limited. ``max_applications`` 0 means no limit on the number of running applications.
    """

    index: int
    description: str = ""
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    max_resources: ResourceList = field(default_factory=dict)
    max_applications: int = 0

    @property
    def label(self) -> str:
        """How messages name the object: its position (1-based) and its ``limit`` text."""
        return (
            f'#{self.index + 1} "{self.description}"' if self.description else f"#{self.index + 1}"
        )

    def report_name(self, through_wildcard: bool) -> str:
        """The ``limit`` field of ``plan``: the text, else ``*`` for a wildcard match, else
        the position."""
        if self.description:
            return self.description
        return WILDCARD if through_wildcard else f"#{self.index + 1}"


@dataclass(frozen=True, slots=True)
class LimitProblem:
    """One broken rule in a quota's user limits: which quota, which limit object, which rule."""

    quota: str
    limit: str
    rule: str
    detail: str

    @property
    def statement(self) -> str:
        """What is wrong, naming the quota and the limit object, without the rule: for a
        refusal or finding that carries the rule in a field of its own."""
        where = f"user limit {self.limit}" if self.limit else "user limits"
        return f"quota {self.quota}: {where}: {self.detail}"

    @property
    def message(self) -> str:
        """The statement with its rule, for a problem that has no rule field (an Event)."""
        return f"{self.statement} (rule {self.rule})"


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """The accepted limit objects of one quota, indexed the way the lookups need them."""

    quota: str
    entries: tuple[LimitEntry, ...] = ()
    #: Named user → its object; the wildcard is kept apart.
    users: Mapping[str, LimitEntry] = field(default_factory=dict)
    user_wildcard: LimitEntry | None = None
    #: Named groups in configuration order (object by object, list order): group selection order.
    group_order: tuple[str, ...] = ()
    groups: Mapping[str, LimitEntry] = field(default_factory=dict)
    group_wildcard: LimitEntry | None = None

    @classmethod
    def of(cls, quota: str, entries: Iterable[LimitEntry]) -> QuotaLimits:
        """Index accepted entries (later duplicates cannot exist: the checks refuse them)."""
        kept = tuple(entries)
        users: dict[str, LimitEntry] = {}
        groups: dict[str, LimitEntry] = {}
        order: list[str] = []
        user_wildcard = group_wildcard = None
        for entry in kept:
            for user in entry.users:
                if user == WILDCARD:
                    user_wildcard = entry
                else:
                    users.setdefault(user, entry)
            for group in entry.groups:
                if group == WILDCARD:
                    group_wildcard = entry
                elif group not in groups:
                    groups[group] = entry
                    order.append(group)
        return cls(quota, kept, users, user_wildcard, tuple(order), groups, group_wildcard)

    def user_limit(self, user: str) -> tuple[LimitEntry | None, bool]:
        """The object in force for ``user`` here and whether it came through the wildcard.

        A named entry replaces the wildcard entirely (no merge of fields)."""
        named = self.users.get(user)
        if named is not None:
            return named, False
        return self.user_wildcard, self.user_wildcard is not None

    def group_limit(self, group: str) -> LimitEntry | None:
        """The object in force for a tracked group here: ``*`` is the group wildcard's object; a
        named group never falls back on the wildcard."""
        if group == WILDCARD:
            return self.group_wildcard
        return self.groups.get(group)


# -- reading the annotation ---------------------------------------------------------------------
