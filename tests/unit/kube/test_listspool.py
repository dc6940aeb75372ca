"""kube.listspool: what a list read as a stream leaves held once it is over.

Rule: the reader keeps the list's ``StreamProgress`` (to say how far a failed list got), but none of
the list's bytes: once the list is read, or has failed, its stream holds no buffer. (It held up to
its compaction threshold, a megabyte and more per kind, from each list to the next.)
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import tracemalloc
from typing import Any

import aiohttp
import orjson
import pytest

from elasticquota.api import Body
from elasticquota.kube.listspool import StreamProgress, read_list
from elasticquota.kube.liststream import ListStream

#: Bytes a finished list may leave held (its progress, the head of the document, the test's own).
HELD_AT_MOST = 64 << 10


class Content:
    """An answer's body in parts, then its end, or a cut connection if ``cut``."""

    def __init__(self, parts: list[bytes], cut: bool) -> None:
        self._parts = parts
        self._cut = cut

    async def readany(self) -> bytes:
        await asyncio.sleep(0)
        if self._parts:
            return self._parts.pop(0)
        if self._cut:
            raise aiohttp.ClientPayloadError("the connection was cut")
        return b""


class Reply:
    """What ``read_list`` reads of an aiohttp answer: its body (cut at ``cut_at`` bytes, if
    given) and its headers."""

    def __init__(self, packed: bytes, cut_at: int | None = None) -> None:
        body = packed if cut_at is None else packed[:cut_at]
        parts = [body[at : at + (1 << 16)] for at in range(0, len(body), 1 << 16)]
        self.content = Content(parts, cut=cut_at is not None)
        self.headers = {"Content-Encoding": "gzip"}


def pod_list(count: int) -> bytes:
    """About 500 bytes a pod: 2,000 pods are 1 MB of JSON, just under the stream's compaction
    threshold (so that the stream would hold all of it)."""

    def pod(index: int) -> dict[str, Any]:
        meta = {"name": f"pod-{index}", "namespace": "ns", "labels": {"app": "a" * 100}}
        return {"metadata": meta, "spec": {"image": "i" * 300}, "status": {"phase": "Running"}}

    items = [pod(index) for index in range(count)]
    document = {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": items}
    return gzip.compress(orjson.dumps(document), 1)


async def held_after(reply: Reply) -> tuple[int, int]:
    """The items read and the bytes still allocated once ``read_list`` is over (its progress kept,
    as the reflector keeps it)."""
    count = 0

    async def feed(items: list[Body]) -> None:
        nonlocal count
        count += len(items)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        progress = StreamProgress(asyncio.get_running_loop(), ListStream())
        with contextlib.suppress(aiohttp.ClientPayloadError):  # a cut list: it was read so far
            await read_list(reply, progress, feed, 5.0)  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the drain task, cancelled, ends
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert progress.stream.count == count
    return count, held


async def test_a_list_read_whole_leaves_none_of_its_bytes_held() -> None:
    count, held = await held_after(Reply(pod_list(2000)))
    assert count == 2000
    assert held < HELD_AT_MOST, f"{held} bytes held after the list"


@pytest.mark.parametrize("part", [2, 3])
async def test_a_list_cut_short_leaves_none_of_its_bytes_held(part: int) -> None:
    packed = pod_list(2000)
    count, held = await held_after(Reply(packed, cut_at=len(packed) * (part - 1) // part))
    assert 0 < count < 2000
    assert held < HELD_AT_MOST, f"{held} bytes held after the cut list"
