"""How the ledger counts: storage keys, adding or removing one pod's figures, layered maps.

Shared by the live ledger and its overlay (``core.userlimits.ledger``). A figure is stored under
a string key ``kind NUL name NUL quota`` (``at_key``; an application adds ``NUL app``);
``count_pod`` adds or removes one counted pod at every level of its path, for its user and its
tracked group; ``Layered`` is the overlay's map: writes kept apart, reads falling through to the
view below, which is never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar, cast

from elasticquota.core.quantities.resources import ResourceList
from elasticquota.core.userlimits.book import QuotaPath
from elasticquota.core.userlimits.records import LimitedPod, Subject

_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class Counted:
    """A counted pod, the group its usage goes to, and what it adds (``LimitedPod.counted``)."""

    pod: LimitedPod
    group: str | None
    counted: ResourceList


#: Separates the parts of a storage key (subject kind, name, quota, application): names never
#: hold it (identities with control characters are refused, Kubernetes names cannot).
SEP: Final = "\x00"


def at_key(kind: str, name: str, quota: str) -> str:
    return f"{kind}{SEP}{name}{SEP}{quota}"


class Writable(Protocol[_V]):
    """What ``count_pod`` needs of a map: a ``CowMap`` or an overlay's ``Layered``."""

    def get(self, key: str, /) -> _V | None: ...

    def __setitem__(self, key: str, value: _V, /) -> None: ...

    def __delitem__(self, key: str, /) -> None: ...


def count_pod(
    entry: Counted,
    sign: int,
    used: Writable[ResourceList],
    running: Writable[int],
    apps: Writable[int],
) -> None:
    """Add (+1) or remove (-1) one counted pod at every level, for its user and its group.

    Usage values are replaced, never changed in place (frozen views may share them); entries
    that drop to nothing are removed, so that nothing is left behind."""
    pod = entry.pod
    levels = path_levels(pod.path)
    for kind, name in subjects(pod.user, entry.group):
        for quota in levels:
            at = at_key(kind, name, quota)
            app_key = f"{at}{SEP}{pod.app}"
            pods_of_app = (apps.get(app_key) or 0) + sign
            if pods_of_app:
                apps[app_key] = pods_of_app
            else:
                del apps[app_key]
            if pods_of_app == (1 if sign > 0 else 0):  # the application starts or stops here
                count = (running.get(at) or 0) + sign
                if count:
                    running[at] = count
                else:
                    del running[at]
                    del used[at]
                    continue
            before = used.get(at) or {}
            after = dict(before)
            for resource, value in entry.counted.items():
                amount = after.get(resource, 0) + sign * value
                if amount:
                    after[resource] = amount
                else:
                    after.pop(resource, None)
            used[at] = after


#: Per class of counted pods (the same path and groups: the same tracked group), the path, the
#: groups, the group their usage goes to and how many pods the class has.
PodClass = tuple[QuotaPath, frozenset[str], str | None, int]


DELETED: Final = object()


class Layered(MutableMapping[str, _V]):
    """Writes go to a dict of its own; reads fall through to ``base`` (never written)."""

    def __init__(self, base: Mapping[str, _V]) -> None:
        self._base = base
        self._local: dict[str, Any] = {}

    def __getitem__(self, key: str) -> _V:
        if key in self._local:
            value = self._local[key]
            if value is DELETED:
                raise KeyError(key)
            return cast(_V, value)
        return self._base[key]

    def __setitem__(self, key: str, value: _V) -> None:
        self._local[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._local[key] = DELETED

    def __iter__(self) -> Iterator[str]:
        for key, value in self._local.items():
            if value is not DELETED:
                yield key
        for key in self._base:
            if key not in self._local:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


def subjects(user: str, group: str | None) -> list[Subject]:
    return [("user", user)] if group is None else [("user", user), ("group", group)]


def path_levels(path: QuotaPath) -> Iterable[str]:
    """The path's quotas, each once (a malformed path must not count a pod twice)."""
    return dict.fromkeys(path)


def pod_class_key(pod: LimitedPod) -> str:
    """What decides a pod's tracked group, as a key: its path and (the set of) its groups."""
    return SEP.join(pod.path) + "\x01" + SEP.join(sorted(set(pod.groups)))
