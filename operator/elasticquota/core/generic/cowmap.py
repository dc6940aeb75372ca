"""Copy-on-write maps: a map the engine changes, and frozen views of it that cost O(buckets).

Every ``Snapshot`` publishes the engine's pods, and its consumers iterate them across ``await``s
while events keep changing the engine: a snapshot must never change under them. Copying 100,000
pods per snapshot made ``solve()`` cost O(pods). Here the entries live in buckets (small dicts
chosen by the key's hash): freezing copies the list of buckets only, and the first write to a
bucket after a freeze copies that one bucket. A frozen view never changes; a write costs O(bucket)
at most once per bucket and freeze.

The buckets double with the map so that they stay small, and the doubling is spread over the
writes that follow (linear hashing): when the map outgrows its ``n`` buckets, ``n`` empty ones are
added and each later write splits ``SPLITS_PER_WRITE`` of the old buckets, moving the entries whose
hash has the new bit set into their new bucket. A key's bucket is ``hash & (n - 1)`` unless that
bucket is already split, then ``hash & (2n - 1)``. Re-spreading 131,072 pods at once held the
event loop for 130 ms (twice: the pods and the pod index double at the same count); a split moves
about 16 entries.

Keys are strings; iteration goes bucket by bucket (not in insertion order, and not the same from
one process to the next: string hashes are randomized). Callers that need an order sort.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from typing import TypeVar, overload

V = TypeVar("V")
T = TypeVar("T")

#: Entries per bucket, on average, above which the buckets double.
LOAD = 16
MIN_BUCKETS = 8
#: Old buckets split by each write while the buckets double: the doubling ends after n/2 writes,
#: long before the map could outgrow twice as many buckets.
SPLITS_PER_WRITE = 2


class _Buckets(Mapping[str, V]):
    """Read access shared by the live map and its frozen views."""

    __slots__ = ("_buckets", "_mask", "_size", "_split")

    def __init__(self, buckets: Sequence[dict[str, V]], size: int, mask: int, split: int) -> None:
        self._buckets = buckets
        #: ``n - 1`` for the ``n`` settled buckets (a power of two).
        self._mask = mask
        #: How many of them are split while the buckets double (0 otherwise).
        self._split = split
        self._size = size

    def _index(self, key: object) -> int:
        """The bucket of ``key``: by the settled mask, or the doubled one once its bucket split."""
        hashed = hash(key)
        index = hashed & self._mask
        if index < self._split:
            return hashed & (2 * self._mask + 1)
        return index

    def __getitem__(self, key: str) -> V:
        return self._buckets[self._index(key)][key]

    def __contains__(self, key: object) -> bool:
        return key in self._buckets[self._index(key)]

    def __iter__(self) -> Iterator[str]:
        for bucket in self._buckets:
            yield from bucket

    def __len__(self) -> int:
        return self._size

    @overload
    def get(self, key: str, /) -> V | None: ...

    @overload
    def get(self, key: str, /, default: V | T) -> V | T: ...

    def get(self, key: str, /, default: V | T | None = None) -> V | T | None:
        """The value of ``key``, or ``default``: one bucket lookup, no exception on a miss."""
        return self._buckets[self._index(key)].get(key, default)

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def items(self) -> ItemsView[str, V]:
        return _Items(self)


class _Values(ValuesView[V]):
    """Values straight from the buckets (the generic view looks every key up again)."""

    __slots__ = ("_source",)

    def __init__(self, source: _Buckets[V]) -> None:
        super().__init__(source)
        self._source = source

    def __iter__(self) -> Iterator[V]:
        for bucket in self._source._buckets:
            yield from bucket.values()


class _Items(ItemsView[str, V]):
    """Items straight from the buckets."""

    __slots__ = ("_source",)

    def __init__(self, source: _Buckets[V]) -> None:
        super().__init__(source)
        self._source = source

    def __iter__(self) -> Iterator[tuple[str, V]]:
        for bucket in self._source._buckets:
            yield from bucket.items()


class FrozenMap(_Buckets[V]):
    """A view of a ``CowMap`` as it was when frozen; it never changes."""

    __slots__ = ()

    def __init__(self, buckets: tuple[dict[str, V], ...], size: int, mask: int, split: int) -> None:
        super().__init__(buckets, size, mask, split)


class CowMap(_Buckets[V]):
    """A string-keyed map whose ``freeze()`` is O(buckets) and leaves the view untouched by later
    writes (each bucket is copied on its first write after a freeze)."""

    __slots__ = ("_frozen", "_generation", "_live", "_owned")

    def __init__(self, items: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        entries = items if isinstance(items, Mapping) else dict(items)
        #: The buckets (the same list as ``_buckets``, typed as changeable).
        self._live = _spread(entries, _bucket_count(len(entries)))
        super().__init__(self._live, len(entries), len(self._live) - 1, 0)
        self._generation = 0
        #: The generation in which each bucket was last copied: it is ours to change iff current.
        self._owned = [0] * len(self._buckets)
        self._frozen: FrozenMap[V] | None = None

    def freeze(self) -> FrozenMap[V]:
        """The current content, for good; the same view again while nothing changed."""
        if self._frozen is None:
            self._frozen = FrozenMap(tuple(self._live), self._size, self._mask, self._split)
            self._generation += 1
        return self._frozen

    def fork(self) -> CowMap[V]:
        """An independent map with the same content, O(buckets): both copy a shared bucket on
        their first write to it."""
        frozen = self.freeze()
        forked: CowMap[V] = CowMap()
        forked._live = forked._buckets = list(frozen._buckets)
        forked._mask = frozen._mask
        forked._split = frozen._split
        forked._size = len(frozen)
        forked._generation = 1
        forked._owned = [0] * len(forked._live)  # none of them its own yet
        return forked

    def __setitem__(self, key: str, value: V) -> None:
        bucket = self._writable(self._index(key))
        if key not in bucket:
            self._size += 1
        bucket[key] = value
        if self._split:
            self._split_some(SPLITS_PER_WRITE)
        elif self._size > LOAD * (self._mask + 1):
            self._start_doubling()

    def __delitem__(self, key: str) -> None:
        del self._writable(self._index(key))[key]
        self._size -= 1

    def pop(self, key: str, default: V | None = None) -> V | None:
        """Remove ``key``: its value, or ``default`` when absent (nothing is copied then)."""
        index = self._index(key)
        if key not in self._buckets[index]:
            return default
        self._size -= 1
        return self._writable(index).pop(key)

    def _writable(self, index: int) -> dict[str, V]:
        """Bucket ``index``, copied first if a frozen view may share it."""
        self._frozen = None
        buckets = self._live
        if self._owned[index] != self._generation:
            buckets[index] = dict(buckets[index])
            self._owned[index] = self._generation
        return buckets[index]

    def _start_doubling(self) -> None:
        """Add as many empty buckets as there are, and split the first old ones."""
        count = self._mask + 1
        self._frozen = None
        self._live.extend({} for _ in range(count))
        self._owned.extend([self._generation] * count)
        self._split_some(SPLITS_PER_WRITE)

    def _split_some(self, buckets: int) -> None:
        """Split the next ``buckets`` old buckets; the last one settles the doubled mask."""
        self._frozen = None
        count = self._mask + 1
        for index in range(self._split, min(self._split + buckets, count)):
            self._split_bucket(index, count)
        self._split = min(self._split + buckets, count)
        if self._split == count:
            self._mask, self._split = 2 * count - 1, 0

    def _split_bucket(self, index: int, count: int) -> None:
        """Old bucket ``index`` into itself and ``index + count``, by the hash's ``count`` bit (new
        dicts: a frozen view may share the old one)."""
        stay: dict[str, V] = {}
        move: dict[str, V] = {}
        for key, value in self._live[index].items():
            (move if hash(key) & count else stay)[key] = value
        self._live[index], self._live[index + count] = stay, move
        self._owned[index] = self._owned[index + count] = self._generation


def _bucket_count(size: int) -> int:
    """A power of two with about ``LOAD / 2`` entries per bucket for ``size`` entries."""
    count = MIN_BUCKETS
    while count * LOAD < size * 2:
        count *= 2
    return count


def _spread(entries: Mapping[str, V], count: int) -> list[dict[str, V]]:
    buckets: list[dict[str, V]] = [{} for _ in range(count)]
    mask = count - 1
    for key, value in entries.items():
        buckets[hash(key) & mask][key] = value
    return buckets
