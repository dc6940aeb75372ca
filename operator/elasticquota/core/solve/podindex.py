"""Where each placed pod counts: pod -> quota, and quota -> its own pods sorted by key.

The engine keeps this index up to date as pods are placed and unplaced, so that a ``Snapshot`` gets
it by freezing (O(buckets), see ``cowmap``) instead of regrouping and sorting every pod on every
``solve()``; a topology change keeps it too, moving only the pods whose quota changed. Each quota's
pods are an immutable tuple replaced on change: a consumer that holds one across an ``await`` keeps
exactly what it was given.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping

from elasticquota.core.generic.cowmap import CowMap, FrozenMap
from elasticquota.core.model.models import PodInfo


def _key(pod: PodInfo) -> str:
    return pod.key


class PodIndex:
    """The placed pods by key and by quota; ``freeze()`` publishes both."""

    def __init__(self) -> None:
        self.quota_of: CowMap[str] = CowMap()
        self.by_quota: CowMap[tuple[PodInfo, ...]] = CowMap()

    def add(self, pod: PodInfo, quota: str) -> None:
        """Count ``pod`` (not indexed yet) in ``quota``: O(the quota's pods), no sort."""
        self.quota_of[pod.key] = quota
        pods = self.by_quota.get(quota, ())
        at = bisect_left(pods, pod.key, key=_key)
        self.by_quota[quota] = (*pods[:at], pod, *pods[at:])

    def remove(self, key: str) -> str | None:
        """Forget the pod ``key``: the quota it counted in (None when it was not indexed)."""
        quota = self.quota_of.pop(key)
        if quota is None:
            return None
        pods = self.by_quota[quota]
        at = bisect_left(pods, key, key=_key)
        self._set(quota, pods[:at] + pods[at + 1 :])
        return quota

    def move(self, leaving: Mapping[str, set[str]], arriving: Mapping[str, list[PodInfo]]) -> None:
        """Many pods at once (a topology change): ``leaving`` quota -> keys of indexed pods that
        leave it, ``arriving`` quota -> pods that (re-)enter it; every leaving pod arrives
        somewhere. One sort per quota concerned, whatever the number of pods moved."""
        for quota in leaving.keys() | arriving.keys():
            gone = leaving.get(quota, set())
            kept = [pod for pod in self.by_quota.get(quota, ()) if pod.key not in gone]
            self._set(quota, tuple(sorted([*kept, *arriving.get(quota, ())], key=_key)))
        for quota, pods in arriving.items():
            for pod in pods:
                self.quota_of[pod.key] = quota

    def fork(self) -> PodIndex:
        """An independent copy, O(buckets): later changes to either one leave the other alone."""
        forked = PodIndex()
        forked.quota_of = self.quota_of.fork()
        forked.by_quota = self.by_quota.fork()
        return forked

    def freeze(self) -> tuple[FrozenMap[str], FrozenMap[tuple[PodInfo, ...]]]:
        """The index as it is now, for a snapshot: pod -> quota, quota -> pods (never changing)."""
        return self.quota_of.freeze(), self.by_quota.freeze()

    def _set(self, quota: str, pods: tuple[PodInfo, ...]) -> None:
        """A quota's new pods; a quota without pods has no entry."""
        if pods:
            self.by_quota[quota] = pods
        else:
            self.by_quota.pop(quota)
