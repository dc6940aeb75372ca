"""Pure, synchronous domain core: quantities, models, quota trees, the solve and the decisions.

Nothing here performs I/O or imports kopf, kubernetes_asyncio or prometheus_client (enforced by
import-linter); the operator and the CLI are thin layers over it. Its packages, each importing
only the ones below it (import contract "Core"):

- ``decisions``: admission, gating, revocation, preemption, over-use, explain, what to write.
- ``solve`` and ``validation`` (independent of each other): the engine and its results; the
  webhooks' admission rules for quotas and pods.
- ``userlimits``: per-user and per-group limits at every level of a tree.
- ``tree``: which quotas form which tree; profiles and their trees.
- ``model``: the typed objects (quotas, pods, nodes, profiles, problems).
- ``quantities``: quantities and resource lists in engine units; a pod's effective request.
- ``keys`` (the names shared with Koordinator) and ``generic`` (cowmap, timeslice).
"""
