"""Building blocks that know nothing of quotas: the bottom of the core, importing none of it.

- ``cowmap``: copy-on-write maps whose frozen views a snapshot publishes (O(buckets) to freeze).
- ``timeslice``: how long a stretch of synchronous work may hold the event loop before it yields.
"""
