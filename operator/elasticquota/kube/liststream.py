"""A Kubernetes list document cut into its items as its bytes arrive: a streamed parse.

A list served from the API server's watch cache (``resourceVersion=0``) comes in one response,
whatever its size (the cache of API servers before 1.27 ignores ``limit``): 100,000 pods are a
couple of hundred MB of JSON. Parsed as one document, the bytes and then the whole tree of Python
objects would be held at once, and the parse would hold the event loop for seconds. Here the bytes
are cut into the ``items`` array's objects as chunks come in, each parsed by ``orjson`` alone, so
that only one chunk and the items not yet handed on are held.

The cut needs no JSON scanner in Python: every item of a list begins with the same first key (the
server encodes the objects of one list alike: ``{"metadata":`` for the built-in kinds,
``{"apiVersion":`` for custom resources), so the end of an item is found among the places where
``},`` is followed by that first key. Such a place can also lie inside an item (a nested list of
objects whose first key is the same, such as owner references); there, the bytes from the item's
start do not form one JSON value, ``orjson`` refuses them, and the next place is tried. Bytes that
form one value from the item's ``{`` can only end at that ``{``'s own closing brace, so an accepted
cut is always the item. What is not items (``kind``, ``metadata`` and its ``resourceVersion``;
before the items for the built-in kinds, after them for custom resources) is parsed at the end.

The answer is asked for gzipped and read off the connection as fast as it comes, its compressed
bytes held until their turn (:class:`Inflater` expands them in bounded pieces for the cut): the
API server (1.20) ends every list at its ``--request-timeout`` (60 s) counted from the request's
arrival, whether or not the client is still reading, so an answer read at the pace of its parse
is cut when the parse takes longer than the server's bound leaves (see ``kube.reflector``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import orjson

from elasticquota.api import Body

ITEMS_KEY = b'"items":'
#: Bytes consumed at the front of the buffer before they are dropped from it.
COMPACT_AFTER = 1 << 20
_BLANK = b" \t\r\n"


class ListStreamError(ValueError):
    """The bytes are not a complete list document."""


class Inflater:
    """The bytes of an answer as its ``Content-Encoding`` gave them (``gzip`` or none), expanded
    in pieces of at most ``piece`` bytes, so that no one step of the parse grows with the list."""

    def __init__(self, encoding: str, piece: int) -> None:
        encoding = encoding.strip().lower()
        if encoding not in ("", "identity", "gzip"):
            raise ListStreamError(f"the list came in an unknown encoding {encoding!r}")
        self._piece = piece
        self._gzip = zlib.decompressobj(wbits=31) if encoding == "gzip" else None

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The expanded bytes of ``data``, in order."""
        if self._gzip is None:
            for start in range(0, len(data), self._piece):
                yield data[start : start + self._piece]
            return
        try:
            while True:
                piece = self._gzip.decompress(data, self._piece)
                if piece:
                    yield piece
                data = self._gzip.unconsumed_tail
                if not data and len(piece) < self._piece:
                    return
        except zlib.error as error:
            raise ListStreamError(f"the gzipped list is damaged ({error})") from None

    def finish(self) -> None:
        """ListStreamError if the compressed stream ended early."""
        if self._gzip is not None and not self._gzip.eof:
            raise ListStreamError("the gzipped list ends early")


class ListStream:
    """Feed the bytes of a list (``feed``), take the items each chunk completes, then ``finish``
    for the document without its items (its ``metadata``, or a ``Status``)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        #: Where the items array begins (its ``[``); None: not found yet (or there is none).
        self._items_at: int | None = None
        self._head = b""
        #: ``}`` + ``,`` + the first key of the items: where one item may end and the next begin.
        self._separator: bytes | None = None
        self._item_start = 0
        self._search_from = 0
        self._ended = False  # the items array is closed; the rest of the buffer is the tail
        self.count = 0

    def feed(self, chunk: bytes) -> list[Body]:
        """The items this chunk completes, in order."""
        self._buffer += chunk
        if self._items_at is None and not self._find_items():
            return []
        if self._separator is None and not self._ended and not self._first_item():
            return []
        items = self._cut() if not self._ended else []
        self._compact()
        return items

    def finish(self) -> tuple[list[Body], Body]:
        """Once every chunk is fed: the last item (which only the end can cut; none if the list is
        empty) and the document without its items. ListStreamError if the bytes end early."""
        buffer = self._buffer
        if self._items_at is None:
            return [], self._parse(bytes(buffer), "the document")
        last: list[Body] = []
        if self._ended:
            tail = bytes(buffer[self._item_start :])
        elif self._separator is not None:
            item, tail = self._last_item()
            last.append(item)
        else:  # the array's ``[`` and nothing after it
            raise ListStreamError("the list ends inside its items")
        return last, self._parse(self._head + b"[]" + tail.lstrip(_BLANK)[1:], "the list")

    def release(self) -> None:
        """Let go of the bytes held: the list is over (read, or failed); ``count`` stays."""
        self._buffer = bytearray()
        self._head = b""

    # -- the steps --------------------------------------------------------------------------------

    def _find_items(self) -> bool:
        at = self._buffer.find(ITEMS_KEY)
        if at < 0:
            return False
        start = at + len(ITEMS_KEY)
        while start < len(self._buffer) and self._buffer[start] in _BLANK:
            start += 1
        if start >= len(self._buffer):
            return False
        if self._buffer[start] != ord("["):  # "items": null: the document is parsed whole
            return False
        self._head = bytes(self._buffer[:start])
        self._items_at = start
        self._item_start = start + 1
        return True

    def _first_item(self) -> bool:
        """Learn the first key of the items, or see that there are none."""
        position = self._item_start
        buffer = self._buffer
        while position < len(buffer) and buffer[position] in _BLANK:
            position += 1
        if position >= len(buffer):
            return False
        if buffer[position] == ord("]"):
            self._ended = True
            self._item_start = position  # the tail starts with the array's ``]``
            return False
        if buffer[position] != ord("{"):
            raise ListStreamError("the list's items are not objects")
        quote = buffer.find(b'"', position + 2)
        if quote < 0 or len(buffer) < quote + 2:
            return False
        if buffer[position + 1] != ord('"') or buffer[quote + 1] != ord(":"):
            raise ListStreamError("an item of the list does not begin with a key")
        self._separator = b"}," + bytes(buffer[position : quote + 2])
        self._item_start = self._search_from = position
        return True

    def _cut(self) -> list[Body]:
        separator = self._separator
        assert separator is not None
        buffer, items = self._buffer, list[Body]()
        while True:
            at = buffer.find(separator, self._search_from)
            if at < 0:
                self._search_from = max(self._item_start, len(buffer) - len(separator) + 1)
                return items
            try:
                item = orjson.loads(buffer[self._item_start : at + 1])
            except orjson.JSONDecodeError:  # the place lies inside the item: try the next
                self._search_from = at + 1
                continue
            items.append(item)
            self.count += 1
            self._item_start = self._search_from = at + 2

    def _last_item(self) -> tuple[Body, bytes]:
        """The last item, once every byte is in (it ends at a ``}]``), and what follows it."""
        rest = bytes(self._buffer[self._item_start :])
        at = rest.find(b"}]")
        while at >= 0:
            try:
                item = orjson.loads(rest[: at + 1])
            except orjson.JSONDecodeError:  # a nested list of objects ends here: try the next
                at = rest.find(b"}]", at + 1)
                continue
            self.count += 1
            return item, rest[at + 1 :]
        raise ListStreamError("the list ends inside an item")

    def _compact(self) -> None:
        if self._item_start < COMPACT_AFTER or self._items_at is None:
            return
        cut = self._item_start
        del self._buffer[:cut]
        self._item_start -= cut
        self._search_from -= cut

    @staticmethod
    def _parse(data: bytes, what: str) -> Body:
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise ListStreamError(f"{what} is not complete JSON ({error})") from None
        if not isinstance(document, dict):
            raise ListStreamError(f"{what} is not a JSON object")
        return document
