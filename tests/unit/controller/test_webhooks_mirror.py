"""What the admission webhooks judge against: the operator's memory, as a request's ``QuotaMirror``.

Rules (controller/webhooks/): the view follows the memory; a request reindexes only the quotas
changed since the last one (the memory's own ``Quota`` objects), and the catalog is built ahead of
the first request, in slices; what was just admitted (``RecentAdmissions``) stands over the memory
until it expires; a dry run is judged but not remembered. The memory's change log does not grow
with every quota ever deleted: it drops deleted keys once they pile up, and a mirror that had not
read them drops those quotas all the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from yielding import yields_during

from elasticquota.controller.quotalog import TOMBSTONES_KEPT
from elasticquota.controller.state import ControllerState
from elasticquota.controller.webhooks import Admission, QuotaMirror, RecentAdmissions, cluster_view
from elasticquota.core.model.quota import Quota
from elasticquota.core.validation.view import QuotaCatalog

if TYPE_CHECKING:
    from conftest import Bodies


def test_the_view_follows_the_memory(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    synced.on_quota(k8s.quota("dept", min={"cpu": "4"}, is_parent=True))
    assert admission.view().quota("dept") is not None
    synced.on_quota(k8s.quota("dept", min={"cpu": "2"}, is_parent=True))
    dept = admission.view().quota("dept")
    assert dept is not None and dept.min == {"cpu": 2000}
    synced.on_quota_deleted(k8s.quota("dept"))
    assert admission.view().quota("dept") is None


class NoWalks(dict[Any, Any]):
    """A dict that refuses to be walked or copied whole."""

    def __iter__(self) -> Any:
        raise AssertionError("walked every quota")

    def items(self) -> Any:
        raise AssertionError("walked every quota")

    def values(self) -> Any:
        raise AssertionError("walked every quota")

    def keys(self) -> Any:
        raise AssertionError("walked every quota")


class RecordingCatalog(QuotaCatalog):
    """A catalog that notes the name of every quota it indexes."""

    def __init__(self) -> None:
        super().__init__()
        self.indexed: list[str] = []

    def upsert(self, source: Quota | Mapping[str, Any]) -> None:
        self.indexed.append(
            source.name if isinstance(source, Quota) else source["metadata"]["name"]
        )
        super().upsert(source)


def recorded_mirror(
    state: ControllerState, k8s: Bodies, quotas: int
) -> tuple[QuotaMirror, list[str]]:
    """A mirror of ``state`` (as a request's admission keeps it) and the quotas it indexes, once
    ``quotas`` quotas ``q0``, ``q1``... are in memory (not yet indexed)."""
    catalog = RecordingCatalog()
    mirror = QuotaMirror(state, RecentAdmissions(), catalog)
    for index in range(quotas):
        state.on_quota(k8s.quota(f"q{index}", max={"cpu": "1"}))
    return mirror, catalog.indexed


def test_a_request_reindexes_only_the_quotas_changed_since_the_last_one(
    synced: ControllerState, k8s: Bodies
) -> None:
    mirror, indexed = recorded_mirror(synced, k8s, quotas=50)
    cluster_view(mirror, synced)
    synced.quotas = NoWalks(synced.quotas)  # a request must not walk all the quotas
    indexed.clear()
    cluster_view(mirror, synced)
    assert indexed == []
    synced.on_quota(k8s.quota("q7", max={"cpu": "2"}))
    synced.on_quota_deleted(k8s.quota("q8"))
    view = cluster_view(mirror, synced)
    assert indexed == ["q7"]
    assert view.quota("q8") is None and view.quota("q9") is not None


def test_the_catalog_holds_the_quotas_the_reader_read(synced: ControllerState, k8s: Bodies) -> None:
    """The webhooks judge against the memory's own ``Quota`` objects: nothing is read twice."""
    mirror, _ = recorded_mirror(synced, k8s, quotas=3)
    view = cluster_view(mirror, synced)
    assert view.quota_at("team", "q1") is synced.quotas[("team", "q1")]


async def test_a_request_during_a_follow_takes_on_only_what_it_has_not_reached(
    synced: ControllerState, k8s: Bodies
) -> None:
    mirror, indexed = recorded_mirror(synced, k8s, quotas=6)
    following = asyncio.create_task(mirror.follow(size=2))
    await asyncio.sleep(0)  # the follow indexed the two oldest changes, then yielded
    assert indexed == ["q0", "q1"]
    view = cluster_view(mirror, synced)  # a request meanwhile: the rest, not the whole log again
    assert indexed[:2] == ["q0", "q1"] and sorted(indexed[2:]) == ["q2", "q3", "q4", "q5"]
    await following
    assert len(indexed) == 6  # nothing indexed twice
    assert all(view.quota(f"q{index}") is not None for index in range(6))


async def test_the_catalog_is_built_ahead_of_the_first_request_in_slices(
    synced: ControllerState, k8s: Bodies
) -> None:
    mirror, indexed = recorded_mirror(synced, k8s, quotas=12)
    _, yields = await yields_during(mirror.follow(size=5))
    assert yields >= 2  # other tasks ran between the slices
    indexed.clear()
    view = cluster_view(mirror, synced)
    assert indexed == []  # the first request found everything indexed
    assert view.quota("q11") is not None


def test_an_expired_admission_gives_way_to_the_memory(synced: ControllerState, k8s: Bodies) -> None:
    now = [0.0]
    recent = RecentAdmissions(ttl=30.0, clock=lambda: now[0])
    mirror = QuotaMirror(synced, recent)
    synced.on_quota(k8s.quota("kept", max={"cpu": "1"}))
    mirror.refresh()
    recent.remember(synced, ("team", "kept"), None)  # admitted: deleted
    recent.remember(synced, ("team", "new"), k8s.quota("new"))  # admitted: created
    catalog = mirror.refresh()
    assert catalog.quota_at("team", "kept") is None
    assert catalog.quota_at("team", "new") is not None
    now[0] = 31.0  # the watch never delivered either: the memory is the truth again
    catalog = mirror.refresh()
    assert catalog.quota_at("team", "kept") is not None
    assert catalog.quota_at("team", "new") is None


def test_a_quota_deleted_and_created_again_stands_until_the_watch_delivers_both(
    admission: Admission, synced: ControllerState, k8s: Bodies
) -> None:
    """The deletion's event alone does not end the new quota's admission: until its creation is
    delivered the name is taken, as a parent, for the same name elsewhere, for a DELETE."""
    first = k8s.quota("a", max={"cpu": "1"})
    synced.on_quota(first)
    admission.validate_quota("DELETE", first, first)
    again = k8s.quota("a", max={"cpu": "2"})
    admission.validate_quota("CREATE", again, None)
    synced.on_quota_deleted(first)  # the watch delivers the deletion, not yet the creation
    seen = admission.view().quota("a")
    assert seen is not None and seen.max == {"cpu": 2000}
    admission.validate_quota("DELETE", again, again, dryrun=True)  # not "not found quota:a"
    synced.on_quota(again)
    admission.view()
    assert len(admission.recent) == 0  # the memory is the truth again


def test_recent_admissions_expire(synced: ControllerState, k8s: Bodies) -> None:
    now = [0.0]
    recent = RecentAdmissions(ttl=30.0, clock=lambda: now[0])
    recent.remember(synced, ("team", "q"), k8s.quota("q"))
    assert list(recent.overlay(synced)) == [("team", "q")]
    now[0] = 31.0
    assert recent.overlay(synced) == {}


def test_a_dry_run_is_judged_but_not_remembered(admission: Admission, k8s: Bodies) -> None:
    admission.validate_quota("CREATE", k8s.quota("q"), None, dryrun=True)
    assert len(admission.recent) == 0


def created_and_deleted(state: ControllerState, k8s: Bodies, count: int, prefix: str) -> None:
    """``count`` quotas of their own namespaces (``<prefix>-0``...), each created and deleted."""
    for index in range(count):
        body = k8s.quota(f"{prefix}-{index}", namespace=f"{prefix}-{index}", max={"cpu": "1"})
        state.on_quota(body)
        state.on_quota_deleted(body)


def test_the_change_log_does_not_grow_with_every_quota_ever_deleted(
    synced: ControllerState, k8s: Bodies
) -> None:
    """A quota per CI run's namespace, created and deleted: the log held each for good."""
    synced.on_quota(k8s.quota("kept", max={"cpu": "1"}))
    created_and_deleted(synced, k8s, 3 * TOMBSTONES_KEPT, "ci")
    assert len(synced.quota_log) <= TOMBSTONES_KEPT + 3
    assert ("team", "kept") in synced.quota_log


async def test_a_mirror_behind_the_dropped_deletions_drops_those_quotas_too(
    synced: ControllerState, k8s: Bodies
) -> None:
    recent = RecentAdmissions()
    mirror = QuotaMirror(synced, recent)
    behind = QuotaMirror(synced, recent)
    synced.on_quota(k8s.quota("kept", max={"cpu": "1"}))
    for index in range(5):
        synced.on_quota(k8s.quota(f"old-{index}", namespace=f"old-{index}", max={"cpu": "1"}))
    mirror.refresh()
    await behind.follow()
    for index in range(5):
        synced.on_quota_deleted(k8s.quota(f"old-{index}", namespace=f"old-{index}"))
    created_and_deleted(synced, k8s, TOMBSTONES_KEPT + 10, "ci")
    synced.on_quota(k8s.quota("new", max={"cpu": "1"}))
    assert synced.quota_log.forgotten > 0  # the deletions of old-0... are no longer in the log
    await behind.follow()
    for catalog in (mirror.refresh(), behind.catalog):
        assert len(catalog) == 2
        assert catalog.quota_at("team", "kept") is not None
        assert catalog.quota_at("team", "new") is not None
