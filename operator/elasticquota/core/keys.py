"""Names shared with Koordinator: API groups, labels, annotations and the reserved quotas.

Koordinator's keys are the default; the seed document's older names are accepted as aliases when
reading. Keys under ``elasticquota.dev/`` are this project's extensions.
"""

from collections.abc import Mapping
from typing import Any, Final

PREFIX: Final = "quota.scheduling.koordinator.sh"

# API groups and kinds.
QUOTA_GROUPS: Final = ("scheduling.sigs.k8s.io", "scheduling.x-k8s.io")
QUOTA_KIND: Final = "ElasticQuota"
PROFILE_GROUP: Final = "quota.koordinator.sh"
PROFILE_KIND: Final = "ElasticQuotaProfile"

# ElasticQuota labels.
LABEL_PARENT: Final = f"{PREFIX}/parent"
LABEL_PARENT_ALIASES: Final = (LABEL_PARENT, f"{PREFIX}/parent-quota-name")
LABEL_IS_PARENT: Final = f"{PREFIX}/is-parent"
LABEL_ALLOW_LENT: Final = f"{PREFIX}/allow-lent-resource"
LABEL_TREE_ID: Final = f"{PREFIX}/tree-id"
LABEL_IS_ROOT: Final = f"{PREFIX}/is-root"
LABEL_PROFILE: Final = f"{PREFIX}/profile"
LABEL_IGNORE_DEFAULT_TREE: Final = f"{PREFIX}/ignore-default-tree"

# ElasticQuota annotations (JSON).
ANNO_SHARED_WEIGHT: Final = f"{PREFIX}/shared-weight"
ANNO_NAMESPACES: Final = f"{PREFIX}/namespaces"
ANNO_TOTAL_RESOURCE: Final = f"{PREFIX}/total-resource"
ANNO_UNSCHEDULABLE_RESOURCE: Final = f"{PREFIX}/unschedulable-resource"
ANNO_RESOURCE_KEYS: Final = f"{PREFIX}/resource-keys"
ANNO_RUNTIME: Final = f"{PREFIX}/runtime"
ANNO_REQUEST: Final = f"{PREFIX}/request"
ANNO_CHILD_REQUEST: Final = f"{PREFIX}/child-request"
ANNO_NON_PREEMPTIBLE_REQUEST: Final = f"{PREFIX}/non-preemptible-request"
ANNO_NON_PREEMPTIBLE_USED: Final = f"{PREFIX}/non-preemptible-used"
#: Written by Koordinator's scheduler with ElasticQuotaGuaranteeUsage only; never by this operator,
#: but removed with the others from a quota that is left out (see ``core.decisions.diff``).
ANNO_GUARANTEED: Final = f"{PREFIX}/guaranteed"
ANNO_ALLOCATED: Final = f"{PREFIX}/allocated"

# Extensions (Kueue-style limits, seed 001).
EXT_PREFIX: Final = "elasticquota.dev"
ANNO_LENDING_LIMIT: Final = f"{EXT_PREFIX}/lending-limit"
ANNO_BORROWING_LIMIT: Final = f"{EXT_PREFIX}/borrowing-limit"
#: Revocation spares the quota's pods (and its descendants' without one of their own) that have
#: run less than this (seconds or a Go duration); absent: the parent's, else the operator's
#: ``revocation_min_runtime``.
ANNO_REVOCATION_MIN_RUNTIME: Final = f"{EXT_PREFIX}/revocation-min-runtime"
#: In-quota preemption spares the quota's pods (and its descendants' without one of their own)
#: that have run less than this; absent: the parent's, else the operator's
#: ``preemption_min_runtime``.
ANNO_PREEMPTION_MIN_RUNTIME: Final = f"{EXT_PREFIX}/preemption-min-runtime"
#: On a quota left out of its tree (a rule it breaks): why; its computed annotations are removed.
ANNO_INVALID: Final = f"{EXT_PREFIX}/invalid"
#: Written by the operator on the quota that owns a name several quotas share (its own uid as the
#: value): the owner keeps the name across restarts, whatever the creation times say.
ANNO_NAME_OWNER: Final = f"{EXT_PREFIX}/name-owner"

# Extensions (YuniKorn-style user and group limits, seed 004).
ANNO_USER_LIMITS: Final = f"{EXT_PREFIX}/user-limits"
ANNO_USER_INFO: Final = f"{EXT_PREFIX}/user-info"
ANNO_USER_INFO_ALIASES: Final = (ANNO_USER_INFO, "yunikorn.apache.org/user.info")
POD_LABEL_APPLICATION: Final = f"{EXT_PREFIX}/application"
POD_LABEL_APPLICATION_ALIASES: Final = (
    POD_LABEL_APPLICATION,
    "applicationId",
    "yunikorn.apache.org/app-id",
)

#: The scheduling gate that holds a new pod back until it fits its quota.
ADMISSION_GATE: Final = f"{EXT_PREFIX}/admission"
#: The pod condition the gate writes: status False (reason QuotaExceeded) while the pod waits for
#: its quota, True (reason Admitted) once the gate has released it to the scheduler.
ADMISSION_CONDITION: Final = "ElasticQuotaAdmission"

# Pod labels.
POD_LABEL_QUOTA: Final = f"{PREFIX}/name"
POD_LABEL_QUOTA_ALIASES: Final = (POD_LABEL_QUOTA, f"{PREFIX}/quota-name")
POD_LABEL_PREEMPTIBLE: Final = f"{PREFIX}/preemptible"

# Reserved quotas.
ROOT_QUOTA: Final = "koordinator-root-quota"
SYSTEM_QUOTA: Final = "koordinator-system-quota"
DEFAULT_QUOTA: Final = "koordinator-default-quota"
RESERVED_QUOTAS: Final = (ROOT_QUOTA, SYSTEM_QUOTA, DEFAULT_QUOTA)
DEFAULT_RESERVED_NAMESPACE: Final = "koordinator-system"
#: Default max of the system and default quotas, per resource (cpu in cores), as the reference.
RESERVED_GROUP_MAX: Final = 1844674407370955161
#: The max the profile controller writes on a profile tree's root quota (MaxInt64 / 2000).
PROFILE_ROOT_MAX: Final = 4611686018427387
DEFAULT_PROFILE_RESOURCE_KEYS: Final = ("cpu", "memory")

DEFAULT_TREE: Final = ""


# -- reading keys that have aliases (the one place each alias is resolved) ------------------------


def first_label(labels: Mapping[str, Any], aliases: tuple[str, ...]) -> str:
    """The value of the first alias set to a non-empty value, or ""."""
    for key in aliases:
        if labels.get(key):
            return str(labels[key])
    return ""


def parent_label(labels: Mapping[str, Any]) -> str:
    """The parent a quota's labels name (the label, or its older alias); "" when neither is set."""
    return first_label(labels, LABEL_PARENT_ALIASES)


def parent_quota(labels: Mapping[str, Any]) -> str:
    """The parent of a quota other than the root: ``parent_label``, the root when unset."""
    return parent_label(labels) or ROOT_QUOTA
