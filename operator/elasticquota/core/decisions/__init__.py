"""What the operator decides from a solved snapshot, for a pod or a quota, as pure functions.

From the bottom up (import contract "Decisions"):

- ``admission``: does a pending pod fit its quota (and its user limits) now;
  ``revocation``: which pods a quota above its runtime gives back; ``overuse``: how long each
  quota has been above its runtime (the revocation timer).
- ``gating``: which gated pods may go now, in which order; ``preemption``: room for a waiting pod
  from lower-priority pods of its own quota; ``explain``: why a pod waits or would be revoked;
  ``diff``: what to write back on a quota object; ``mutation``: the defaults of a new quota;
  ``affinity``: the node affinity that keeps a profile's pods on its nodes.
"""
