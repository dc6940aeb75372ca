"""kube.liststream: a list document cut into its items as its bytes arrive.

Rules: whatever the chunks, the items come out whole, in order, each once; the rest of the
document (its metadata) comes out at the end, whether it was before the items (built-in kinds)
or after them (custom resources); an item holding objects whose first key is the items' own first
key is not cut inside; bytes that end early are an error, never a shorter list.
"""

from __future__ import annotations

import gzip
import random
from typing import Any

import orjson
import pytest

from elasticquota.kube.liststream import COMPACT_AFTER, Inflater, ListStream, ListStreamError


def pod(index: int) -> dict[str, Any]:
    """A pod whose insides repeat the first key of the items (``metadata``), in several forms."""
    return {
        "metadata": {
            "name": f"p{index}",
            "ownerReferences": [{"metadata": 1}, {"metadata": {"x": "}]"}}],
        },
        "spec": {"volumes": [{"a": '},{"metadata":'}, {"metadata": {}}]},
    }


def pod_list(count: int) -> dict[str, Any]:
    items = [pod(index) for index in range(count)]
    return {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "7"},
        "items": items,
    }


def custom_list(count: int) -> dict[str, Any]:
    """The order of an unstructured list (custom resources): its keys sorted, items first."""
    items = [
        {
            "apiVersion": "x/v1",
            "kind": "Q",
            "metadata": {"o": [{"apiVersion": 1}, {"apiVersion": 2}]},
        }
        for _ in range(count)
    ]
    return {
        "apiVersion": "x/v1",
        "items": items,
        "kind": "QList",
        "metadata": {"resourceVersion": "9"},
    }


def cut(data: bytes, sizes: random.Random, largest: int) -> tuple[list[Any], dict[str, Any]]:
    stream, items, position = ListStream(), [], 0
    while position < len(data):
        size = sizes.randint(1, largest)
        items += stream.feed(data[position : position + size])
        position += size
    last, document = stream.finish()
    return items + last, document


@pytest.mark.parametrize("document", [pod_list(40), custom_list(12), pod_list(1), pod_list(0)])
@pytest.mark.parametrize("largest", [1, 7, 64, 1 << 16])
def test_any_chunks_give_every_item_once_and_the_metadata(
    document: dict[str, Any], largest: int
) -> None:
    sizes = random.Random(largest)
    items, rest = cut(orjson.dumps(document), sizes, largest)
    assert items == document["items"]
    assert rest == {**document, "items": []}


def test_an_item_comes_out_once_the_next_one_begins() -> None:
    data = orjson.dumps(pod_list(3))
    third = data.index(b',{"metadata":{"name":"p2"') + len(b',{"metadata":')
    stream = ListStream()
    assert [item["metadata"]["name"] for item in stream.feed(data[: third - 1])] == ["p0"]
    assert [item["metadata"]["name"] for item in stream.feed(data[third - 1 : third])] == ["p1"]


def test_a_long_list_is_not_held_whole() -> None:
    data = orjson.dumps(pod_list(20_000))
    stream = ListStream()
    count = 0
    for position in range(0, len(data), 1 << 16):
        count += len(stream.feed(data[position : position + (1 << 16)]))
        assert len(stream._buffer) < COMPACT_AFTER + (1 << 17)
    assert count + len(stream.finish()[0]) == 20_000


@pytest.mark.parametrize("end", [10, 200, -3, -1])
def test_bytes_that_end_early_are_an_error(end: int) -> None:
    data = orjson.dumps(pod_list(3))
    stream = ListStream()
    stream.feed(data[:end])
    with pytest.raises(ListStreamError):
        stream.finish()


def test_a_status_answer_comes_out_as_the_document() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500}
    stream = ListStream()
    assert stream.feed(orjson.dumps(status)) == []
    assert stream.finish() == ([], status)


# -- the answer's encoding ------------------------------------------------------------------------


def test_a_gzipped_list_comes_out_whole_in_pieces_no_larger_than_asked() -> None:
    document = orjson.dumps({"kind": "PodList", "items": [pod(i) for i in range(2000)]})
    packed = gzip.compress(document)
    inflater = Inflater("gzip", 4096)
    pieces = [
        piece
        for start in range(0, len(packed), 1000)
        for piece in inflater.pieces(packed[start : start + 1000])
    ]
    inflater.finish()
    assert b"".join(pieces) == document
    assert max(len(piece) for piece in pieces) <= 4096


def test_an_uncompressed_list_is_cut_into_pieces_too() -> None:
    inflater = Inflater("", 3)
    assert list(inflater.pieces(b"abcdefg")) == [b"abc", b"def", b"g"]
    inflater.finish()


def test_a_gzipped_list_that_ends_early_is_an_error() -> None:
    packed = gzip.compress(orjson.dumps({"items": [pod(i) for i in range(50)]}))
    inflater = Inflater("gzip", 1 << 16)
    list(inflater.pieces(packed[: len(packed) // 2]))
    with pytest.raises(ListStreamError, match="ends early"):
        inflater.finish()


def test_damaged_or_unknown_encodings_are_errors() -> None:
    with pytest.raises(ListStreamError, match="damaged"):
        list(Inflater("gzip", 1024).pieces(b"not gzip at all"))
    with pytest.raises(ListStreamError, match="unknown encoding 'br'"):
        Inflater("br", 1024)
