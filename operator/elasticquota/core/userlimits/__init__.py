"""Per-user and per-group limits at every level of a quota tree: YuniKorn's user quota enforcement.

Pure and synchronous (no Kubernetes I/O, no metrics), in parts that the engine, the webhooks,
``plan``, the metrics and the CLI put together:

- ``config``: the quota annotation ``elasticquota.dev/user-limits``, a YAML or JSON list of
  YuniKorn limit objects (``limit``, ``users``, ``groups``, ``maxresources``, ``maxapplications``;
  Kubernetes resource names and quantities, ``vcore`` read as ``cpu``), checked with every
  per-quota rule of YuniKorn's validator (``../shared/reference/yunikorn-semantics.md`` §2, rules
  1-10): empty user and group lists, name patterns, duplicated names, named entries after a
  wildcard, a lone group wildcard, non-positive or negative ``maxresources``, a negative
  ``maxapplications``, an object that limits nothing, ``maxresources`` above the quota's max
  (the values in ``limits``, the rules for one object in ``rules``).
- ``book``: the limits of a whole tree; rules 11-13 between a quota and its ancestors (a lower
  limit for the same name, else for a named entry the ancestor's wildcard, must fit in the one in
  force above); the object in force for a user (named, else the user wildcard; levels are
  independent) or a group (named; ``*`` for the catch-all); the tracked group of an application
  (from the leaf up, the first named group of a quota's limits in configuration order that the
  user belongs to, else ``*`` at a quota with a group wildcard; none without groups);
  ``change_problems``: what a quota update breaks, for the quota webhook.
- ``identity``: a pod's user and groups (``elasticquota.dev/user-info``, alias
  ``yunikorn.apache.org/user.info``; default user ``nobody``) and its application key (label
  ``elasticquota.dev/application``, aliases ``applicationId`` and ``yunikorn.apache.org/app-id``,
  else the controller's uid, else the pod), always prefixed with the namespace.
- ``ledger``: usage and running applications per user and per tracked group at every quota on a
  pod's path, updated pod by pod, and the admission check (every applicable user and group limit
  holds with the pod added, at its quota and every ancestor; a new application must fit
  ``maxapplications``; exactly at the limit is allowed; decreases are never refused), the over-use
  left by a limit lowered after the fact (listed, never evicted) and the ``plan`` usage view;
  ``records``: the values it takes and gives (the pod as limits see it, refusals, verdicts,
  over-uses, usage lines); ``counting``: how it stores and counts one pod's figures.
- ``tracker``: what the engine keeps: the books of every tree (each quota's annotation parsed once
  per change), one ledger per tree fed as pods are placed, carried over a topology rebuild on a
  fork (only moved pods counted again), and frozen into each ``Snapshot`` (``user_limits``).
- ``report``: the usage view bounded for metrics (at most N subjects per quota, the rest summed
  under ``(other)``).

Deliberately different from YuniKorn:

- A broken limit object is dropped on its own with a problem naming the quota, the object (its
  position and ``limit`` text) and the rule; the quota's other objects and every other quota stay
  in force (YuniKorn refuses the whole configuration). A dropped object counts as not written for
  the later checks. The quota webhook still refuses any annotation with a problem.
- Unknown keys in a limit object are a problem (YuniKorn's strict YAML reading fails too), with a
  hint for habitual spellings (``maxResources``); ``{limits: [...]}`` is accepted as well as the
  bare list; YAML aliases are refused (an unquoted ``*`` is one: quote it).
- Quantities are Kubernetes quantities in the quota's own units; a resource absent from a limit is
  not limited; ``pods`` counts 1 per pod, so a pasted YuniKorn limit on ``pods`` is honoured.
- Rule 9 (the queue's own ``maxapplications``) has no ElasticQuota counterpart and is not applied;
  rule 10 compares with ``spec.max`` wherever it is set, the tree's root included.
- Between levels, every name's limit is carried through levels that set nothing, and the carried
  ``maxapplications`` is the minimum with 0 read as unlimited (YuniKorn's ``Min`` carries 0, which
  drops the limit for deeper levels).
- The tracked group is resolved from the current configuration, not remembered from the first
  time an application was looked at: after a configuration change the usage of running pods moves
  to their new group (which may then show over-use; reported, never evicted).
- A user without groups has none (YuniKorn's resolver invents a primary group named after the
  user); an application is keyed by namespace + id; one application with pods of several users
  counts each pod for its own user; an application with pods in several quotas counts once per
  quota subtree.
"""

from __future__ import annotations

from elasticquota.core.userlimits.book import (
    LimitBook,
    QuotaLimitSource,
    QuotaPath,
    build_book,
    change_problems,
    check_hierarchy,
)
from elasticquota.core.userlimits.config import (
    check_limit_objects,
    load_limit_objects,
    parse_quota_limits,
)
from elasticquota.core.userlimits.identity import (
    DEFAULT_USER,
    Identity,
    IdentityReading,
    application_id,
    identity_from_user_info,
    parse_user_info,
    read_identity,
    shared_application,
)
from elasticquota.core.userlimits.ledger import UserLimitLedger
from elasticquota.core.userlimits.limits import (
    PODS,
    WILDCARD,
    LimitEntry,
    LimitProblem,
    QuotaLimits,
)
from elasticquota.core.userlimits.records import (
    APPLICATIONS,
    Kind,
    LimitedPod,
    LimitRefusal,
    OverUse,
    Subject,
    SubjectUsage,
    UserLimitVerdict,
)
from elasticquota.core.userlimits.report import OTHER, capped

__all__ = [
    "APPLICATIONS",
    "DEFAULT_USER",
    "OTHER",
    "PODS",
    "WILDCARD",
    "Identity",
    "IdentityReading",
    "Kind",
    "LimitBook",
    "LimitEntry",
    "LimitProblem",
    "LimitRefusal",
    "LimitedPod",
    "OverUse",
    "QuotaLimitSource",
    "QuotaLimits",
    "QuotaPath",
    "Subject",
    "SubjectUsage",
    "UserLimitLedger",
    "UserLimitVerdict",
    "application_id",
    "build_book",
    "capped",
    "change_problems",
    "check_hierarchy",
    "check_limit_objects",
    "identity_from_user_info",
    "load_limit_objects",
    "parse_quota_limits",
    "parse_user_info",
    "read_identity",
    "shared_application",
]
