"""The typed, immutable objects the core reasons about: quotas, pods, nodes, profiles, problems.

- ``quota``: ``Quota``, one ElasticQuota as every part reads it (identity, sections as written,
  fields read from them); ``quotaread``: its one reader, which lists what does not read and
  leaves what that means to the caller (the engine's parse in ``elasticquota.api``, the webhooks'
  in ``core.validation``).
- ``models``: pods, nodes, profiles and problems, built at the edge (``elasticquota.api``) from
  raw Kubernetes objects, in engine units; nothing above this package sees strings where it
  needs numbers.
"""
