"""The live operator: Kopf handlers feed memory; per-tree loops solve, diff and write.

``runner`` wires it together; ``state`` is the memory; ``reconcile`` the tree loops and the writer;
``profiles`` the ElasticQuotaProfile controller; ``reserved``, ``problems`` and ``health`` the rest.
"""
