"""What the replica shows about itself: its HTTP server, the event loop's lag, the heap's upkeep.

- ``health``: the probes (``/healthz``, ``/readyz``), ``/statusz`` and the ``/metrics``
  exposition, on the metrics port;
- ``loopprobe``: how long something held the event loop, and where (the stall watchdog);
- ``heap``: the garbage collector's full collections kept off the event loop's budget.

The three are independent of each other (import contract "Observability"). The Prometheus
registry they serve is ``controller.metrics``, a layer below: every loop feeds it, and its
collectors read the memory at scrape time.
"""
