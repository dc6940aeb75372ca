"""The JSON patch of a mutating webhook's answer, made from the merge patch its handler wrote.

Kopf makes it by applying the merge patch to a deep copy of the whole object and diffing the
whole object with the copy (``kopf.Patch.as_json_patch``): under a burst of pods, a deep copy
and a diff of every pod created, the largest part of the operator's CPU per pod. ``json_patch``
makes the same change touching only the paths the merge patch names: the dicts along them are
copied (each once, shallow), the merge patch is applied to the copies by Kopf's rules, and only
the copied dicts are compared with the originals (the rest is shared, so equal by identity).

Kopf's rules of applying a merge patch (``kopf._cogs.structs.patches``), kept here: a mapping in
the patch merges key by key into the object (an empty one changes nothing); None removes the
key, then every parent the removal left empty (an empty parent on the path is removed even when
the key was absent already); any other value (a list included) replaces what is there, missing
parents created. A path through something that is not a mapping is a ``TypeError``, as in Kopf.

The operations differ in shape from Kopf's (an "add" of a whole new sub-map where Kopf lists
each leaf); applied to the object they give the same object, which
tests/unit/controller/test_webhooks_patches.py holds on generated objects and patches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

#: A JSON patch (RFC 6902): its operations in order.
JSONPatch = list[dict[str, Any]]
Path = tuple[str, ...]


def pointer_segment(key: str) -> str:
    """A key as one segment of a JSON pointer (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def json_patch(body: Mapping[str, Any], merge: Mapping[str, Any]) -> JSONPatch:
    """The JSON patch that makes ``body`` what ``merge`` applied to it by Kopf's rules makes it
    (``body`` is not changed)."""
    changed = _CopyOnWrite(body)
    changed.merge((), merge)
    operations: JSONPatch = []
    changed.diff(body, changed.root, "", operations)
    return operations


class _CopyOnWrite:
    """The object with the merge patch applied: the dicts on the patched paths are copies
    (``copied``, by identity), everything else the original's own."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.root: dict[str, Any] = dict(body)
        self.copied: set[int] = {id(self.root)}

    def merge(self, path: Path, value: Any) -> None:
        """Kopf's ``Patch._apply_patch``: the value at ``path`` of the patch applied."""
        if value is None:
            self._remove(self.root, path)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                self.merge((*path, key), item)
        else:
            self._parent(path)[path[-1]] = value

    def _own(self, node: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
        """``node[key]`` made a copy of its own (once), to be changed."""
        child: Any = node[key]
        if not isinstance(child, Mapping):
            raise TypeError(f"cannot patch {'.'.join(path)}: {key!r} holds no object")
        if id(child) not in self.copied:
            child = node[key] = dict(child)
            self.copied.add(id(child))
        return cast(dict[str, Any], child)

    def _parent(self, path: Path) -> dict[str, Any]:
        """The dict that holds ``path``'s last key, copied, missing levels created (Kopf's
        ``dicts.ensure``)."""
        node = self.root
        for key in path[:-1]:
            if key not in node:
                node[key] = {}
                self.copied.add(id(node[key]))
            node = self._own(node, key, path)
        return node

    def _remove(self, node: dict[str, Any], path: Path) -> None:
        """Kopf's ``dicts.remove``: the key gone, then each parent on the path left empty."""
        key = path[0]
        if len(path) == 1:
            node.pop(key, None)
            return
        if key not in node:
            return
        child = self._own(node, key, path)
        self._remove(child, path[1:])
        if child == {}:
            del node[key]

    def diff(
        self, old: Mapping[str, Any], new: Mapping[str, Any], pointer: str, into: JSONPatch
    ) -> None:
        """The operations from ``old`` to ``new`` (a copy), descending only into copies."""
        for key in old:
            if key not in new:
                into.append({"op": "remove", "path": f"{pointer}/{pointer_segment(key)}"})
        for key, value in new.items():
            path = f"{pointer}/{pointer_segment(key)}"
            if key not in old:
                into.append({"op": "add", "path": path, "value": value})
                continue
            before = old[key]
            if value is before:
                continue
            copy = isinstance(value, dict) and id(value) in self.copied
            if copy and isinstance(before, Mapping):
                self.diff(before, value, path, into)
            elif value != before:
                into.append({"op": "replace", "path": path, "value": value})
