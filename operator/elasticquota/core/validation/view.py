"""The quotas and pods the rules judge against: `QuotaCatalog` and the read-only `ClusterView`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from elasticquota.core import keys
from elasticquota.core.model.models import PodInfo
from elasticquota.core.validation.facts import (
    QuotaFacts,
    QuotaKey,
    _mapping,
    _namespaces,
    _string_map,
    object_name,
    parent_of_body,
    read_quota,
)


class QuotaCatalog:
    """The quotas, indexed by object, by name, by parent and by annotated namespace.

    Kept current one object at a time (``upsert`` / ``remove``), so that a long-lived catalog
    costs nothing per request; a quota is parsed on first use and again only when it changes.
    Quota names are global, as in the reference; of quotas sharing a name (possible only where
    the webhook was not asked) "the" quota of that name is its owner as the engine decides it
    (``core.tree.topology.name_order``): the one holding its name record, else the oldest, then the
    lower uid, then the first by namespace (a ``ClusterView`` may know better: ``owner_of``).
    """

    def __init__(self, quotas: Iterable[Mapping[str, Any]] = ()) -> None:
        self._raw: dict[QuotaKey, Mapping[str, Any]] = {}
        self._facts: dict[QuotaKey, QuotaFacts] = {}
        self._by_name: dict[str, set[QuotaKey]] = {}
        self._children: dict[str, dict[QuotaKey, str]] = {}
        self._namespaces: dict[QuotaKey, tuple[str, ...]] = {}
        self._owners: dict[str, set[QuotaKey]] = {}
        for raw in quotas:
            self.upsert(raw)

    @staticmethod
    def key_of(raw: Mapping[str, Any]) -> QuotaKey:
        return str(_mapping(raw.get("metadata")).get("namespace") or ""), object_name(raw)

    def upsert(self, raw: Mapping[str, Any]) -> None:
        key = self.key_of(raw)
        self.remove(key)
        name = key[1]
        self._raw[key] = raw
        self._by_name.setdefault(name, set()).add(key)
        if name != keys.ROOT_QUOTA:
            self._children.setdefault(parent_of_body(raw), {})[key] = name
        annotations = _string_map(_mapping(raw.get("metadata")).get("annotations"))
        self._namespaces[key] = _namespaces(name, annotations, [])
        for namespace in self._namespaces[key]:
            self._owners.setdefault(namespace, set()).add(key)

    def remove(self, key: QuotaKey) -> None:
        raw = self._raw.pop(key, None)
        if raw is None:
            return
        self._facts.pop(key, None)
        _discard(self._by_name, key[1], key)
        if key[1] != keys.ROOT_QUOTA:
            siblings = self._children.get(parent_of_body(raw), {})
            siblings.pop(key, None)
        for namespace in self._namespaces.pop(key, ()):
            _discard(self._owners, namespace, key)

    def __len__(self) -> int:
        return len(self._raw)

    def quota_at(self, namespace: str, name: str) -> QuotaFacts | None:
        key = (namespace, name)
        if key not in self._facts:
            raw = self._raw.get(key)
            if raw is None:
                return None
            self._facts[key] = read_quota(raw)[0]
        return self._facts[key]

    def key_named(self, name: str, owner_namespace: str | None = None) -> QuotaKey | None:
        """The key of the quota that owns ``name``: the one in ``owner_namespace`` when there is
        one, else by the owner rule."""
        keys_ = self._by_name.get(name)
        if not keys_:
            return None
        if len(keys_) == 1:
            return next(iter(keys_))
        if owner_namespace is not None and (owner_namespace, name) in keys_:
            return owner_namespace, name
        return min(keys_, key=self._owner_order)

    def _owner_order(self, key: QuotaKey) -> tuple[bool, str, str, str]:
        metadata = _mapping(self._raw[key].get("metadata"))
        uid = str(metadata.get("uid") or "")
        record = _string_map(metadata.get("annotations")).get(keys.ANNO_NAME_OWNER)
        return (
            not (uid and record == uid),
            str(metadata.get("creationTimestamp") or "~"),
            uid or "~",
            key[0],
        )

    def children(self, name: str) -> list[str]:
        return sorted(set(self._children.get(name, {}).values()) - {name})

    def namespace_owner(self, namespace: str) -> str | None:
        owners = self._owners.get(namespace)
        return min(owners)[1] if owners else None


def _discard(index: dict[str, set[QuotaKey]], name: str, key: QuotaKey) -> None:
    members = index.get(name)
    if members is not None:
        members.discard(key)
        if not members:
            del index[name]


class ClusterView:
    """What the rules read: the quotas (a ``QuotaCatalog``) and the pods, read-only.

    Only a DELETE or an ``is-parent`` change looks at the pods, so they are listed on first use.
    """

    def __init__(
        self,
        quotas: QuotaCatalog | Iterable[Mapping[str, Any]],
        pods: Iterable[PodInfo] = (),
        owner_of: Callable[[str], str | None] | None = None,
    ) -> None:
        """``owner_of``: the namespace of the quota that owns a name, as the engine decided it
        (it remembers which quota had a name first); the catalog's owner rule when None."""
        self._catalog = quotas if isinstance(quotas, QuotaCatalog) else QuotaCatalog(quotas)
        self._pod_source = pods
        self._pods: tuple[PodInfo, ...] | None = None
        self._owner_of = owner_of

    def quota(self, name: str) -> QuotaFacts | None:
        """The quota of that name (any namespace): its owner, when several share it."""
        owner = self._owner_of(name) if self._owner_of is not None else None
        key = self._catalog.key_named(name, owner)
        return None if key is None else self._catalog.quota_at(*key)

    def owns_name(self, quota: QuotaFacts) -> bool:
        """Whether ``quota`` is the owner of its name (not a quota left out for sharing it)."""
        owner = self.quota(quota.name)
        return owner is None or owner.namespace == quota.namespace

    def quota_at(self, namespace: str, name: str) -> QuotaFacts | None:
        """The stored copy of exactly this object."""
        return self._catalog.quota_at(namespace, name)

    def children(self, name: str) -> list[str]:
        """Names of the quotas whose parent label names ``name``, sorted."""
        return self._catalog.children(name)

    def namespace_owner(self, namespace: str) -> str | None:
        """The quota whose ``namespaces`` annotation lists ``namespace``."""
        return self._catalog.namespace_owner(namespace)

    @property
    def pods(self) -> tuple[PodInfo, ...]:
        """Every known pod, by ``namespace/name``."""
        if self._pods is None:
            self._pods = tuple(sorted(self._pod_source, key=lambda pod: pod.key))
        return self._pods

    def pods_labelled(self, quota: str) -> list[PodInfo]:
        """Pods whose quota label names ``quota`` (the only pods DELETE looks at)."""
        return [pod for pod in self.pods if pod.quota_label == quota]

    def pods_bound(self, quota: str, namespaces: Iterable[str]) -> list[PodInfo]:
        """Pods labelled with ``quota``, in the namespace named ``quota`` or in ``namespaces``."""
        wanted = {quota, *namespaces}
        return [pod for pod in self.pods if pod.quota_label == quota or pod.namespace in wanted]
