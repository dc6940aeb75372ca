"""The live operator: readers feed memory; per-tree loops solve, diff and write.

``runner`` wires it together; ``ingest`` the readers (one list-and-watch per kind); ``state`` is
the memory; ``reconcile`` the tree loops and the writer;
``profiles`` the ElasticQuotaProfile controller; ``reserved``, ``problems`` and ``health`` the rest.
"""
