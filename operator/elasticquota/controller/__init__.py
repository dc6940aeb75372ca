"""The live operator: readers feed memory; per-tree loops solve, diff and write.

``runner`` wires it together; ``ingest`` the readers (one list-and-watch per kind); ``state`` is
the memory; ``reconcile`` the tree loops, ``writer`` the diffs and the writes; ``webhooks`` the
admission webhooks; ``profiles`` the ElasticQuotaProfile controller; ``reserved``, ``problems``
and ``health`` the rest. The map: docs/architecture.md.
"""
