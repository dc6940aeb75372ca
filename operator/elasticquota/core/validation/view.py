"""The quotas and pods the rules judge against: `QuotaCatalog` and the read-only `ClusterView`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from elasticquota.core import keys
from elasticquota.core.models import PodInfo
from elasticquota.core.validation.facts import (
    QuotaFacts,
    QuotaKey,
    _mapping,
    _namespaces,
    _parent_label,
    _string_map,
    object_name,
    read_quota,
)


class QuotaCatalog:
    """The quotas, indexed by object, by name, by parent and by annotated namespace.

    Kept current one object at a time (``upsert`` / ``remove``), so that a long-lived catalog
    costs nothing per request; a quota is parsed on first use and again only when it changes.
    Quota names are global, as in the reference; of quotas sharing a name the first by namespace
    is "the" quota of that name.
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
            self._children.setdefault(_parent_label(raw), {})[key] = name
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
            siblings = self._children.get(_parent_label(raw), {})
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

    def key_named(self, name: str) -> QuotaKey | None:
        keys_ = self._by_name.get(name)
        return min(keys_) if keys_ else None

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
        self, quotas: QuotaCatalog | Iterable[Mapping[str, Any]], pods: Iterable[PodInfo] = ()
    ) -> None:
        self._catalog = quotas if isinstance(quotas, QuotaCatalog) else QuotaCatalog(quotas)
        self._pod_source = pods
        self._pods: tuple[PodInfo, ...] | None = None

    def quota(self, name: str) -> QuotaFacts | None:
        """The quota of that name (any namespace)."""
        key = self._catalog.key_named(name)
        return None if key is None else self._catalog.quota_at(*key)

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
        """Pods whose quota label names ``quota`` (the only pods DELETE looks at, §4.5)."""
        return [pod for pod in self.pods if pod.quota_label == quota]

    def pods_bound(self, quota: str, namespaces: Iterable[str]) -> list[PodInfo]:
        """Pods labelled with ``quota``, in the namespace named ``quota`` or in ``namespaces``."""
        wanted = {quota, *namespaces}
        return [pod for pod in self.pods if pod.quota_label == quota or pod.namespace in wanted]
