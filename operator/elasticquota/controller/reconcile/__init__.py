"""Reconcile and write: the loops that bring the cluster's objects in line with the memory.

From the top (import contract "Reconcile"):

- ``reconciler``: the dispatcher and one loop per quota tree: solve, diff, write what is due;
- ``problems``: broken objects reported as Events and a marker on the quota;
- ``names``: the name-owner record of quota names several quotas share;
- ``reserved``: the root, system and default quotas, created at start-up when missing;
- ``profiles``: each ElasticQuotaProfile's root quota follows its node pool;
- ``writer`` (below them all): the diffs and the ``Writer`` that sends them through the
  ``Cluster`` port and keeps what the cluster answered.
"""
