"""core.generic.cowmap, core.solve.podindex: what a snapshot publishes never changes once made.

Rules: a ``CowMap`` reads like the dict of the same writes, whatever the order of writes, deletes
and freezes; a ``FrozenMap`` keeps the content it had when frozen while the map keeps changing (it
may be iterated across later writes); freezing twice without a write gives the same view. A
``PodIndex`` keeps each quota's pods sorted by key in a tuple that is replaced, never changed.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from elasticquota.core.generic.cowmap import LOAD, MIN_BUCKETS, SPLITS_PER_WRITE, CowMap
from elasticquota.core.model.models import PodInfo
from elasticquota.core.solve.podindex import PodIndex

KEYS = st.sampled_from([f"k{index}" for index in range(300)])
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, st.integers(0, 9)),
        st.tuples(st.just("delete"), KEYS, st.none()),
        st.tuples(st.just("pop"), KEYS, st.none()),
        st.tuples(st.just("freeze"), st.none(), st.none()),
        st.tuples(st.just("fork"), st.none(), st.none()),
    ),
    max_size=400,
)


@settings(max_examples=80, deadline=None)
@given(operations=OPERATIONS)
def test_a_cow_map_reads_like_a_dict_and_its_frozen_views_never_change(
    operations: list[tuple[str, Any, Any]],
) -> None:
    live: CowMap[int] = CowMap()
    model: dict[str, int] = {}
    views: list[tuple[Any, dict[str, int]]] = []
    for verb, key, value in operations:
        if verb == "set":
            live[key] = value
            model[key] = value
        elif verb == "delete" and key in model:
            del live[key]
            del model[key]
        elif verb == "pop":
            assert live.pop(key) == model.pop(key, None)
        elif verb == "freeze":
            views.append((live.freeze(), dict(model)))
        elif verb == "fork":  # the fork carries on as the map; the origin must stay as it was
            views.append((live, dict(model)))
            live = live.fork()
    assert dict(live) == model and len(live) == len(model)
    assert dict(live.items()) == model and sorted(live.values()) == sorted(model.values())
    for view, content in views:
        assert dict(view) == content and len(view) == len(content)
        assert all(view[key] == value and key in view for key, value in content.items())
        assert view.get("missing") is None and view.get("missing", -1) == -1


def test_a_frozen_view_can_be_iterated_while_the_map_changes() -> None:
    live: CowMap[int] = CowMap({f"k{index}": index for index in range(1000)})
    view = live.freeze()
    seen = []
    for key in view:  # every write below copies a bucket or regrows: the view is untouched
        seen.append(key)
        live.pop(key)
        live[f"new-{key}"] = 1
    assert sorted(seen) == sorted(f"k{index}" for index in range(1000))
    assert len(view) == 1000 and len(live) == 1000


def test_freezing_without_a_write_gives_the_same_view() -> None:
    live: CowMap[int] = CowMap({"a": 1})
    first = live.freeze()
    assert live.freeze() is first
    live["b"] = 2
    assert live.freeze() is not first and dict(first) == {"a": 1}


def test_the_buckets_grow_with_the_map() -> None:
    live: CowMap[int] = CowMap()
    for index in range(20_000):
        live[str(index)] = index
    assert len(live._buckets) >= 20_000 // 16
    assert max(len(bucket) for bucket in live._buckets) < 64


def test_the_buckets_double_a_few_buckets_per_write() -> None:
    """No write re-spreads the map: between two frozen views, at most the written bucket and the
    ``SPLITS_PER_WRITE`` split ones (two buckets each) differ; lookups stay right meanwhile."""
    live: CowMap[int] = CowMap()
    before = live.freeze()
    changed_most = 0
    for index in range(5_000):
        live[str(index)] = index
        after = live.freeze()
        old, new = before._buckets, after._buckets
        changed = sum(
            1
            for position, bucket in enumerate(new)
            if position >= len(old) or bucket is not old[position]
        )
        changed_most = max(changed_most, changed - (len(new) - len(old)))
        assert live.get(str(index // 2)) == index // 2 and str(index + 1) not in live
        before = after
    assert changed_most <= 1 + 2 * SPLITS_PER_WRITE
    assert len(live._buckets) >= 5_000 // LOAD and dict(live) == {str(i): i for i in range(5_000)}


def test_a_view_frozen_while_the_buckets_double_keeps_reading_right() -> None:
    live: CowMap[int] = CowMap()
    count = 0
    while not live._split:  # add until the buckets are in the middle of a doubling
        live[f"k{count}"] = count
        count += 1
    view = live.freeze()
    forked = live.fork()
    for index in range(count):
        live[f"k{index}"] = -index
        forked.pop(f"k{index}")
    assert count > LOAD * MIN_BUCKETS and len(view) == count
    assert all(view[f"k{index}"] == index for index in range(count))
    assert len(forked) == 0 and live["k5"] == -5 and len(live) == count


def pod(name: str) -> PodInfo:
    return PodInfo(namespace="team", name=name, requests={})


@settings(max_examples=60, deadline=None)
@given(
    moves=st.lists(
        st.tuples(st.sampled_from([f"p{index}" for index in range(20)]), st.sampled_from("abc")),
        max_size=60,
    )
)
def test_a_pod_index_keeps_every_quota_sorted_and_never_changes_a_published_tuple(
    moves: list[tuple[str, str]],
) -> None:
    index = PodIndex()
    model: dict[str, str] = {}
    published = []
    for name, quota in moves:
        key = f"team/{name}"
        if key in model:
            assert index.remove(key) == model.pop(key)
        else:
            index.add(pod(name), quota)
            model[key] = quota
        quota_of, by_quota = index.freeze()
        published.append(
            (by_quota, {q: tuple(p.key for p in pods) for q, pods in by_quota.items()})
        )
        assert dict(quota_of) == model
    for by_quota, keys in published:
        assert {q: tuple(p.key for p in pods) for q, pods in by_quota.items()} == keys
    expected = {quota: sorted(k for k, q in model.items() if q == quota) for quota in "abc"}
    assert {q: [p.key for p in pods] for q, pods in index.by_quota.items()} == {
        quota: keys for quota, keys in expected.items() if keys
    }


def test_moving_many_pods_at_once_sorts_each_quota_once() -> None:
    index = PodIndex()
    for name in ("p3", "p1", "p2"):
        index.add(pod(name), "a")
    index.move({"a": {"team/p1"}}, {"b": [pod("p1"), pod("p0")]})
    assert [p.key for p in index.by_quota["a"]] == ["team/p2", "team/p3"]
    assert [p.key for p in index.by_quota["b"]] == ["team/p0", "team/p1"]
    assert dict(index.quota_of) == {
        "team/p0": "b",
        "team/p1": "b",
        "team/p2": "a",
        "team/p3": "a",
    }


def test_a_fork_and_its_origin_change_independently() -> None:
    origin = CowMap({f"k{index}": index for index in range(100)})
    forked = origin.fork()
    origin["k1"] = -1
    del origin["k2"]
    forked["k3"] = -3
    forked.pop("k4")
    forked["new"] = 7
    assert (origin["k1"], origin.get("k2"), origin["k3"], origin["k4"]) == (-1, None, 3, 4)
    assert (forked["k1"], forked["k2"], forked["k3"], forked.get("k4")) == (1, 2, -3, None)
    assert "new" not in origin and forked["new"] == 7
    assert (len(origin), len(forked)) == (99, 100)
