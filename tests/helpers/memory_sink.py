"""A reflector's sink that keeps what it is handed, as the controller's memory would hold it.

Shared by the reflector's KMock tests (list from the watch cache, paged fall-back) and its
integration tests against the real API server.
"""

from __future__ import annotations

from typing import Any

from elasticquota.kube.readerparts import object_key

Key = tuple[str, str]


class MemorySink:
    """The objects by (namespace, name), and every relist's set of keys in order; ``held``: keys
    held from before the first list (as objects deleted while no reader ran)."""

    def __init__(self, held: set[Key] | None = None) -> None:
        self.objects: dict[Key, dict[str, Any]] = {key: {} for key in held or set()}
        self.relists: list[set[Key]] = []

    def upsert(self, body: dict[str, Any]) -> None:
        self.objects[object_key(body)] = body

    def delete(self, body: dict[str, Any]) -> None:
        self.objects.pop(object_key(body), None)

    async def relisted(self, keys: set[Key]) -> None:
        self.relists.append(set(keys))
        for key in set(self.objects) - keys:
            del self.objects[key]

    def names(self, namespace: str) -> set[str]:
        """The names held in ``namespace``."""
        return {name for ns, name in self.objects if ns == namespace}
