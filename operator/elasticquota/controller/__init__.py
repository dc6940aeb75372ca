"""The live operator: readers feed memory; per-tree loops solve, diff and write.

From the top down, each part importing only the ones below it (import contract "Controller"):

- ``runner``: wires it together (readers, Lease, loops, probes, Kopf);
- ``ingest`` (the readers, one list-and-watch per kind), ``reconcile`` (the tree loops, the
  writes, problems, name records, reserved quotas, profiles), ``enforcement`` (revocation,
  gating), ``webhooks`` (admission, identity stamping, the server and its certificate) and
  ``observability`` (probes, status, event-loop lag, heap): independent of each other;
- ``context`` (what every writing loop is given) and ``solving`` (solves and rebuilds off the
  event loop);
- ``metrics``: the Prometheus registry every part feeds, read from memory at scrape time;
- ``state`` (the memory) and ``cluster`` (the port every write goes through).

The map: docs/architecture.md.
"""
