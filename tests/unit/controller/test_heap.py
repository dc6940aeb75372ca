"""``heap.freeze``: what lived through start-up is no longer visited by full collections."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import pytest

from elasticquota.controller.observability import heap


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the test session collects as usual


def _visited(obj: object) -> bool:
    return any(obj is other for other in gc.get_objects())


def test_objects_alive_at_the_freeze_are_not_visited_again() -> None:
    before = [{"pod": index} for index in range(100)]
    assert _visited(before)
    frozen = heap.freeze("in a test", collect=True)
    after = [{"pod": index} for index in range(100)]
    assert frozen == gc.get_freeze_count() > 100
    assert not _visited(before)
    assert _visited(after)


def test_frozen_objects_are_still_freed_when_unreferenced() -> None:
    class Record:
        pass

    record = Record()
    heap.freeze("in a test")
    count = gc.get_freeze_count()
    del record
    assert gc.get_freeze_count() == count - 1


def test_malloc_arenas_are_capped_where_the_c_library_is_glibc() -> None:
    """In a subprocess: the cap is process-wide and must come before threads allocate."""
    code = (
        "from elasticquota.controller.observability import heap; import platform; "
        "print(heap.limit_malloc_arenas(), platform.libc_ver()[0])"
    )
    capped, libc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert capped == str(libc == "glibc")


class Node:
    """An object that can sit in a reference cycle and be watched by a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def refreezing() -> Iterator[heap.Refreezer]:
    refreezer = heap.refreeze_after_collections()
    yield refreezer
    gc.callbacks.remove(refreezer)


@pytest.mark.usefixtures("refreezing")
def test_the_survivors_of_a_full_collection_are_frozen() -> None:
    survivor = [{"pod": index} for index in range(100)]
    gc.collect()
    assert not _visited(survivor)
    young = [{"pod": index} for index in range(100)]
    assert _visited(young)


@pytest.mark.usefixtures("refreezing")
def test_the_survivors_of_a_middle_generation_collection_are_frozen_too() -> None:
    survivor = [{"pod": index} for index in range(100)]
    gc.collect(1)
    assert not _visited(survivor)  # a full collection will not scan them again
    young = [{"pod": index} for index in range(100)]
    gc.collect(0)
    assert _visited(young)  # the youngest generation's survivors are left to the collector


@pytest.mark.usefixtures("refreezing")
def test_a_thaw_collects_a_cycle_that_died_while_frozen() -> None:
    first, second = Node(), Node()
    first.other, second.other = second, first
    watch = weakref.ref(first)
    gc.collect()  # both survive, frozen
    del first, second
    gc.collect()
    assert watch() is not None  # a frozen cycle is not collected...
    assert heap.thaw() >= 2
    assert watch() is None  # ...until a thaw


async def run_briefly(task: asyncio.Task[None], seconds: float) -> None:
    await asyncio.sleep(seconds)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_thaw_waits_for_a_quiet_moment() -> None:
    """The first look (0.1 s) notes the heap; due at the second (0.2 s: the heap grew); the
    watches are busy until 0.15 s; quiet needs 0.02 s."""
    thawed: list[float] = []
    quiet_from = time.monotonic() + 0.15
    counts = iter([100, 200, 100])

    def last_activity() -> float:
        return min(time.monotonic(), quiet_from)

    thawing = heap.thaw_when_grown(
        last_activity,
        lambda: 1000,  # the cluster's size: steady
        lambda: next(counts, 100),
        check_every=0.1,
        quiet_for=0.02,
        collect=lambda: thawed.append(time.monotonic()) or 0,
    )
    await run_briefly(asyncio.create_task(thawing), 0.3)
    assert len(thawed) == 1 and thawed[0] >= quiet_from + 0.02


async def test_no_thaw_until_the_heap_grew_by_a_quarter() -> None:
    """Looks every 10 ms, the first one noting the heap: 124 and 125 blocks after 100 are no
    reason; 126 is, and the next thaw needs a quarter more than what the thaw left (110: above
    137)."""
    thawed: list[int] = []
    counts = iter([100, 124, 125, 126, 110, 130, 137, 138, 90])

    def blocks() -> int:
        return next(counts, 90)

    thawing = heap.thaw_when_grown(
        lambda: 0.0,
        lambda: 1000,
        blocks,
        check_every=0.01,
        quiet_for=0.0,
        collect=lambda: thawed.append(len(thawed)) or 0,
    )
    await run_briefly(asyncio.create_task(thawing), 0.2)
    assert thawed == [0, 1]


def test_a_cluster_that_grew_explains_its_heap() -> None:
    """A burst adds half the pods and a third of the heap: no thaw. Blocks beyond a
    quarter more than the growth explains are (cycles lost): a thaw. A cluster that shrinks does
    not lower the bar below what the last thaw left."""
    rule = heap.ThawRule()
    rule.note(heap=450_000, population=111_000)
    assert not rule.due(heap=620_000, population=161_000)  # the burst: 1.38 x heap, 1.45 x pods
    assert rule.due(heap=620_000, population=111_000)  # as many pods: cycles lost
    assert not rule.due(heap=560_000, population=50_000)  # fewer pods: the bar stays
    assert rule.due(heap=570_000, population=50_000)


def test_a_slow_collection_is_logged_with_its_thread(
    refreezing: heap.Refreezer, caplog: pytest.LogCaptureFixture
) -> None:
    refreezing.slow_after = 0.0
    caplog.set_level(logging.INFO, logger=heap.__name__)
    worker = threading.Thread(target=gc.collect, name="solve-worker")
    worker.start()
    worker.join()
    assert "garbage collection of generation 2 took" in caplog.text
    assert "in thread solve-worker" in caplog.text


def test_the_collector_callback_is_installed_once(refreezing: heap.Refreezer) -> None:
    assert heap.refreeze_after_collections() is refreezing
    assert sum(isinstance(callback, heap.Refreezer) for callback in gc.callbacks) == 1
