"""The quotas and pods the rules judge against: `QuotaCatalog` and the read-only `ClusterView`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from elasticquota.core import keys
from elasticquota.core.model.models import PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.model.quotaread import quota_key
from elasticquota.core.quantities.resources import ResourceList, add
from elasticquota.core.validation.facts import QuotaKey, exact_amounts, read_quota


class QuotaCatalog:
    """The quotas, indexed by object, by name, by parent and by annotated namespace.

    Kept current one object at a time (``upsert`` / ``remove``), so that a long-lived catalog
    costs nothing per request. It holds ``Quota`` models: the operator's memory gives it those its
    reader read (nothing is read twice), a raw object (``plan``, a recent admission) is read here.
    Quota names are global, as in the reference; of quotas sharing a name (possible only where
    the webhook was not asked) "the" quota of that name is its owner as the engine decides it
    (``core.tree.topology.name_order``): the one holding its name record, else the oldest, then the
    lower uid, then the first by namespace (a ``ClusterView`` may know better: ``owner_of``).
    """

    def __init__(self, quotas: Iterable[Quota | Mapping[str, Any]] = ()) -> None:
        self._quotas: dict[QuotaKey, Quota] = {}
        self._by_name: dict[str, set[QuotaKey]] = {}
        self._children: dict[str, dict[QuotaKey, str]] = {}
        self._owners: dict[str, set[QuotaKey]] = {}
        #: Counts the changes, so that a ``ClusterView`` knows when what it remembered is stale.
        self.version = 0
        for quota in quotas:
            self.upsert(quota)

    @staticmethod
    def key_of(raw: Mapping[str, Any]) -> QuotaKey:
        return quota_key(raw)

    def upsert(self, source: Quota | Mapping[str, Any]) -> None:
        """Index a quota (a raw object is read first)."""
        quota = source if isinstance(source, Quota) else read_quota(source)[0]
        key = (quota.namespace, quota.name)
        self.remove(key)
        self.version += 1
        self._quotas[key] = quota
        self._by_name.setdefault(quota.name, set()).add(key)
        if quota.name != keys.ROOT_QUOTA:
            self._children.setdefault(quota.parent, {})[key] = quota.name
        for namespace in quota.namespaces:
            self._owners.setdefault(namespace, set()).add(key)

    def remove(self, key: QuotaKey) -> None:
        quota = self._quotas.pop(key, None)
        if quota is None:
            return
        self.version += 1
        _discard(self._by_name, key[1], key)
        if key[1] != keys.ROOT_QUOTA:
            self._children.get(quota.parent, {}).pop(key, None)
        for namespace in quota.namespaces:
            _discard(self._owners, namespace, key)

    def __len__(self) -> int:
        return len(self._quotas)

    def quota_at(self, namespace: str, name: str) -> Quota | None:
        return self._quotas.get((namespace, name))

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
        quota = self._quotas[key]
        return (not quota.holds_name_record, quota.created or "~", quota.uid or "~", key[0])

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

    Only a DELETE or an ``is-parent`` change looks at the pods: each looks for the few it names
    among them and sorts those only (sorting 100,000 pods by key first held the event loop for
    80 ms per request). A DELETE asks ``labelled`` first (the operator's: the engine's pod index,
    which holds a valid quota's pods), and looks at every pod only where it does not know.
    The quota of each name, each quota's children and the sum of their mins are looked up once
    and remembered until the catalog changes (``plan`` judges every child of a parent against the
    same siblings: without this, a wide level costs the square of its width).
    """

    def __init__(
        self,
        quotas: QuotaCatalog | Iterable[Quota | Mapping[str, Any]],
        pods: Iterable[PodInfo] = (),
        owner_of: Callable[[str], str | None] | None = None,
        labelled: Callable[[str], Sequence[PodInfo] | None] | None = None,
    ) -> None:
        """``owner_of``: the namespace of the quota that owns a name, as the engine decided it
        (it remembers which quota had a name first); the catalog's owner rule when None.
        ``labelled``: the pods labelled with a quota, by key, as an index knows them (None: not
        known there); without it every pod is looked at."""
        self._catalog = quotas if isinstance(quotas, QuotaCatalog) else QuotaCatalog(quotas)
        #: Read again by each look (the operator's is a live view of the engine's pods).
        self._pods: Collection[PodInfo] = pods if isinstance(pods, Collection) else tuple(pods)
        self._owner_of = owner_of
        self._labelled = labelled
        self._named: dict[str, Quota | None] = {}
        self._children: dict[str, list[str]] = {}
        self._children_min: dict[str, tuple[ResourceList, Counter[str]]] = {}
        self._version = self._catalog.version

    def _current(self) -> None:
        """Forget what was remembered when the catalog has changed since."""
        if self._version != self._catalog.version:
            self._named.clear()
            self._children.clear()
            self._children_min.clear()
            self._version = self._catalog.version

    def quota(self, name: str) -> Quota | None:
        """The quota of that name (any namespace): its owner, when several share it."""
        self._current()
        if name not in self._named:
            owner = self._owner_of(name) if self._owner_of is not None else None
            key = self._catalog.key_named(name, owner)
            self._named[name] = None if key is None else self._catalog.quota_at(*key)
        return self._named[name]

    def owns_name(self, quota: Quota) -> bool:
        """Whether ``quota`` is the owner of its name (not a quota left out for sharing it)."""
        owner = self.quota(quota.name)
        return owner is None or owner.namespace == quota.namespace

    def quota_at(self, namespace: str, name: str) -> Quota | None:
        """The stored copy of exactly this object."""
        return self._catalog.quota_at(namespace, name)

    def children(self, name: str) -> list[str]:
        """Names of the quotas whose parent label names ``name``, sorted."""
        self._current()
        if name not in self._children:
            self._children[name] = self._catalog.children(name)
        return list(self._children[name])

    def children_min(self, name: str, but: str) -> ResourceList:
        """The sum of the mins of ``name``'s children (the quota of each child's name), leaving
        out the child named ``but``: exactly the per-key sum over the other children's mins (in
        ``facts.NANOS``, ``facts.exact_amounts``), with the keys that at least one of them has."""
        self._current()
        if name not in self._children_min:
            total: ResourceList = {}
            present: Counter[str] = Counter()
            for child in self.children(name):
                facts = self.quota(child)
                if facts is not None:
                    total = add(total, exact_amounts(facts, "min"))
                    present.update(facts.min.keys())
            self._children_min[name] = total, present
        total, present = self._children_min[name]
        left_out = self.quota(but) if but in self.children(name) else None
        if left_out is None:
            return dict(total)
        subtracted = exact_amounts(left_out, "min")
        return {
            key: value - subtracted.get(key, 0)
            for key, value in total.items()
            if present[key] - (key in subtracted) > 0
        }

    def namespace_owner(self, namespace: str) -> str | None:
        """The quota whose ``namespaces`` annotation lists ``namespace``."""
        return self._catalog.namespace_owner(namespace)

    def pods_labelled(self, quota: str) -> list[PodInfo]:
        """Pods whose quota label names ``quota`` (the only pods DELETE looks at), by key."""
        known = self._labelled(quota) if self._labelled is not None else None
        if known is not None:
            return list(known)
        return sorted([pod for pod in self._pods if pod.quota_label == quota], key=_pod_key)

    def pods_bound(self, quota: str, namespaces: Iterable[str]) -> list[PodInfo]:
        """Pods labelled with ``quota``, in the namespace named ``quota`` or in ``namespaces``,
        by key."""
        wanted = {quota, *namespaces}
        found = [pod for pod in self._pods if pod.quota_label == quota or pod.namespace in wanted]
        return sorted(found, key=_pod_key)


def _pod_key(pod: PodInfo) -> str:
    return pod.key
