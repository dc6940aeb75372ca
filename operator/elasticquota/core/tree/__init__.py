"""The quota trees: which quotas form which tree, and the trees that profiles cut out.

- ``topology``: trees from a flat set of quotas; a quota that breaks a structural rule is left
  out with a ``Problem`` naming it and the rule, and every other quota is kept.
- ``profiles``: ElasticQuotaProfile, a node pool with a tree of its own, and its root quota.

The two are independent of each other (import contract "Quota trees").
"""
