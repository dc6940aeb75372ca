"""The typed, immutable objects the core reasons about: quotas, pods, nodes, profiles, problems.

- ``models``: built at the edge (``elasticquota.api``) from raw Kubernetes objects, in engine
  units; nothing above this package sees strings where it needs numbers.
"""
