"""Admission rules for ElasticQuotas and Pods: the reference's webhooks, as pure functions.

Each ``validate_*`` takes the object under review as the API server sends it (a raw dict: it may be
broken in ways the engine would not take, such as a negative min), reads it with the one reader of
quotas (``core.model.quotaread``, through ``facts.read_quota``) and takes a read-only
``ClusterView`` of the quotas and pods the operator knows, and returns every rule the request
breaks; an empty list means "allowed". Messages name the quota, the rule and the numbers, in the
reference's wording where it has one so that Koordinator users recognise them. Unlike the
reference, which stops at its first error, every independent violation is reported.

Extensions of this project are checked too: parent cycles (the reference cannot meet one, its
topology is built by its own admissions), the lending / borrowing limit annotations, malformed
JSON in the ``namespaces`` annotation (the reference silently ignores it), parent / tree labels
that are not valid label values (reported as such rather than as a parent that does not exist),
and the ``user-limits`` annotation (``userlimits``: YuniKorn's limit rules, the very checks ``plan``
and the engine apply, on the quota and against its ancestors' and descendants' limits).

Nothing here does I/O: the Kopf handlers (``elasticquota.controller.webhooks``) build the view
from the operator's memory, call these functions and turn violations into admission errors.
"""

from __future__ import annotations

from elasticquota.core.validation.facts import (
    ANNO_MAX_STRICT_CHECK_KEYS,
    LABEL_ALLOW_FORCE_UPDATE,
    WATCHED_ANNOTATIONS,
    WATCHED_LABELS,
    QuotaKey,
    Violation,
    object_name,
    read_quota,
)
from elasticquota.core.validation.labels import label_value_violations
from elasticquota.core.validation.pods import pod_quota, validate_pod
from elasticquota.core.validation.requests import (
    quota_unchanged,
    validate_quota_create,
    validate_quota_delete,
    validate_quota_update,
)
from elasticquota.core.validation.self_item import self_item_violations
from elasticquota.core.validation.topology import topology_violations
from elasticquota.core.validation.userlimits import user_limit_violations
from elasticquota.core.validation.view import ClusterView, QuotaCatalog

__all__ = [
    "ANNO_MAX_STRICT_CHECK_KEYS",
    "LABEL_ALLOW_FORCE_UPDATE",
    "WATCHED_ANNOTATIONS",
    "WATCHED_LABELS",
    "ClusterView",
    "QuotaCatalog",
    "QuotaKey",
    "Violation",
    "label_value_violations",
    "object_name",
    "pod_quota",
    "quota_unchanged",
    "read_quota",
    "self_item_violations",
    "topology_violations",
    "user_limit_violations",
    "validate_pod",
    "validate_quota_create",
    "validate_quota_delete",
    "validate_quota_update",
]
