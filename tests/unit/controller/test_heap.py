"""``heap.freeze``: what lived through start-up is no longer visited by full collections."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from elasticquota.controller import heap


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
        "from elasticquota.controller import heap; import platform; "
        "print(heap.limit_malloc_arenas(), platform.libc_ver()[0])"
    )
    capped, libc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert capped == str(libc == "glibc")
