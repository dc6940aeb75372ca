"""The quota objects the engine was given: usable specs, and the holders of unusable ones.

A quota whose spec cannot be used (it failed to parse) is in no tree, its pods go to the default
quota, but it still owns its name: a quota sharing that name never takes the name or its pods
while the owner is being fixed. Every change that can move quotas between trees counts in
``changes``; the engine compares the count with the one its latest rebuild was prepared at.
"""

from __future__ import annotations

from elasticquota.core.model.quota import Quota

QuotaKey = tuple[str, str]


class QuotaSpecs:
    """The current specs and name holders by (namespace, name), and how often they changed."""

    def __init__(self) -> None:
        self.specs: dict[QuotaKey, Quota] = {}
        self.holders: dict[QuotaKey, Quota] = {}
        #: Changes so far (each one makes the topology stale).
        self.changes = 0

    def upsert(self, spec: Quota) -> bool:
        """Add or replace a spec; False for an identical one (only our annotations moved)."""
        key = (spec.namespace, spec.name)
        if self.specs.get(key) == spec:
            return False
        self.specs[key] = spec
        self.holders.pop(key, None)
        return self._changed()

    def hold(self, quota: Quota) -> bool:
        """The object's spec is unusable: it only holds its name from now on (its identity:
        a change of what it reads as does not count while it stays unusable)."""
        key = (quota.namespace, quota.name)
        identity = quota.identity()
        had_spec = self.specs.pop(key, None) is not None
        if had_spec or self.holders.get(key) != identity:
            self.holders[key] = identity
            return self._changed()
        return False

    def delete(self, namespace: str, name: str) -> bool:
        had_spec = self.specs.pop((namespace, name), None) is not None
        if self.holders.pop((namespace, name), None) is not None or had_spec:
            return self._changed()
        return False

    def _changed(self) -> bool:
        self.changes += 1
        return True
