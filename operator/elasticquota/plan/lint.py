"""What the API server accepts but nothing reads: unknown fields, resource names, label and
annotation keys, each reported with the closest valid name ("did you mean ...").

* Fields: ElasticQuota and ElasticQuotaProfile objects against their CRDs' schemas (``FIELDS``,
  kept equal to ``crds/`` by a test) and ``metadata`` against ObjectMeta. The API server prunes an
  unknown field without a word (kubectl only warns): a ``mni:`` under ``spec`` is a quota without
  a min.
* Resource names in a quota's ``spec.min`` / ``spec.max``: Kubernetes' own (``cpu``, ``memory``,
  ``ephemeral-storage``, ``storage``, ``pods``, ``hugepages-<size>``), the same prefixed with
  ``requests.`` or ``limits.`` (as in a ResourceQuota), or an extended resource, which is always
  domain-prefixed (``nvidia.com/gpu``, ``kubernetes.io/batch-cpu``). Anything else (``cpus``,
  ``gpu``) is counted as written and matches no pod's request.
* Label and annotation keys under this project's prefixes (``quota.scheduling.koordinator.sh/``,
  ``elasticquota.dev/``, or a prefix a typo away from them) that it does not read where they are
  written: a misspelt ``is-parent`` makes a parent a leaf.

All are warnings: the object is accepted and computed as written.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from elasticquota.core import keys
from elasticquota.core.validation import ANNO_MAX_STRICT_CHECK_KEYS, LABEL_ALLOW_FORCE_UPDATE
from elasticquota.plan.findings import WARNING, Finding, object_ref

#: A schema's known fields: a name maps to its own fields, or to None when anything goes below
#: it (a map such as ``labels`` or ``spec.min``, a scalar, or an object that keeps unknown fields).
FieldTree = dict[str, "FieldTree | None"]

OBJECT_META: Final[FieldTree] = dict.fromkeys(
    (
        "name", "generateName", "namespace", "labels", "annotations", "uid", "resourceVersion",
        "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
        "ownerReferences", "finalizers", "managedFields", "selfLink",
    )
)  # fmt: skip

#: The CRDs' fields (``crds/``; ``metadata`` is ObjectMeta, which the CRDs leave open).
FIELDS: Final[dict[str, FieldTree]] = {
    keys.QUOTA_KIND: {
        "apiVersion": None,
        "kind": None,
        "metadata": OBJECT_META,
        "spec": {"min": None, "max": None},
        "status": {"used": None},
    },
    keys.PROFILE_KIND: {
        "apiVersion": None,
        "kind": None,
        "metadata": OBJECT_META,
        "spec": {
            "quotaName": None,
            "quotaLabels": None,
            "resourceRatio": None,
            "nodeSelector": {
                "matchLabels": None,
                "matchExpressions": {"key": None, "operator": None, "values": None},
            },
        },
        "status": None,
    },
}


def schema_fields(schema: Mapping[str, Any]) -> FieldTree | None:
    """The known fields of an OpenAPI v3 schema (a CRD version's ``openAPIV3Schema``)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return None
    if schema.get("type") == "array":
        return schema_fields(schema.get("items") or {})
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    return {str(name): schema_fields(sub) for name, sub in properties.items()}


def _suggestion(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]}?" if close else ""


def _unknown_fields(value: Any, known: FieldTree | None, path: str) -> Iterable[tuple[str, str]]:
    """(path, hint) of every field of ``value`` that ``known`` does not list."""
    if known is None:
        return
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, Mapping):
            continue
        for name, sub in item.items():
            where = f"{path}.{name}" if path else str(name)
            if name not in known:
                yield where, _suggestion(str(name), known)
            else:
                yield from _unknown_fields(sub, known[name], where)


# -- resource names ---------------------------------------------------------------------------

STANDARD_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage", "storage", "pods")
#: Extended resources people mean when they write the bare name (suggestions only).
COMMON_EXTENDED: Final = (
    "nvidia.com/gpu",
    "amd.com/gpu",
    "kubernetes.io/batch-cpu",
    "kubernetes.io/batch-memory",
)
_HUGEPAGES: Final = re.compile(r"^hugepages-[0-9]+(\.[0-9]+)?([KMGTPE]i?)?$")
_QUALIFIED: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    r"/([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$"
)
RESOURCE_NAME_RULE: Final = (
    "a resource is cpu, memory, ephemeral-storage, storage, pods, hugepages-<size>, one of "
    "these after requests. or limits., or an extended resource named <domain>/<name>"
)


def is_resource_name(name: str) -> bool:
    if name in STANDARD_RESOURCES or _HUGEPAGES.match(name):
        return True
    for prefix in ("requests.", "limits."):
        if name.startswith(prefix):
            rest = name.removeprefix(prefix)
            return rest in STANDARD_RESOURCES or bool(_HUGEPAGES.match(rest))
    return bool(_QUALIFIED.match(name))


def _resource_hint(name: str) -> str:
    bare = [item for item in COMMON_EXTENDED if item.rpartition("/")[2] == name]
    if bare:
        return f"did you mean {bare[0]}?"
    names = [
        f"{prefix}{each}" for prefix in ("", "requests.", "limits.") for each in STANDARD_RESOURCES
    ]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]}?"
    return f"an extended resource needs a domain, e.g. example.com/{name}"


# -- label and annotation keys ----------------------------------------------------------------

QUOTA_LABELS: Final = (
    *keys.LABEL_PARENT_ALIASES,
    keys.LABEL_IS_PARENT,
    keys.LABEL_ALLOW_LENT,
    keys.LABEL_TREE_ID,
    keys.LABEL_IS_ROOT,
    keys.LABEL_PROFILE,
    keys.LABEL_IGNORE_DEFAULT_TREE,
    LABEL_ALLOW_FORCE_UPDATE,
)
QUOTA_ANNOTATIONS: Final = (
    keys.ANNO_SHARED_WEIGHT,
    keys.ANNO_NAMESPACES,
    keys.ANNO_TOTAL_RESOURCE,
    keys.ANNO_UNSCHEDULABLE_RESOURCE,
    keys.ANNO_RESOURCE_KEYS,
    keys.ANNO_RUNTIME,
    keys.ANNO_REQUEST,
    keys.ANNO_CHILD_REQUEST,
    keys.ANNO_NON_PREEMPTIBLE_REQUEST,
    keys.ANNO_NON_PREEMPTIBLE_USED,
    keys.ANNO_GUARANTEED,
    keys.ANNO_ALLOCATED,
    keys.ANNO_LENDING_LIMIT,
    keys.ANNO_BORROWING_LIMIT,
    keys.ANNO_INVALID,
    keys.ANNO_NAME_OWNER,
    keys.ANNO_USER_LIMITS,
    keys.ANNO_REVOCATION_MIN_RUNTIME,
    keys.ANNO_PREEMPTION_MIN_RUNTIME,
    ANNO_MAX_STRICT_CHECK_KEYS,
)
POD_LABELS: Final = (
    *keys.POD_LABEL_QUOTA_ALIASES,
    keys.POD_LABEL_PREEMPTIBLE,
    keys.POD_LABEL_APPLICATION,
)
POD_ANNOTATIONS: Final = (keys.ANNO_USER_INFO,)
PROFILE_LABELS: Final = (keys.LABEL_TREE_ID,)
PROFILE_ANNOTATIONS: Final = (keys.ANNO_RESOURCE_KEYS,)
OUR_PREFIXES: Final = (keys.PREFIX, keys.EXT_PREFIX)

#: Every place a key is read: (kind, "label" | "annotation") -> the keys read there.
KNOWN_KEYS: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    (keys.QUOTA_KIND, "label"): QUOTA_LABELS,
    (keys.QUOTA_KIND, "annotation"): QUOTA_ANNOTATIONS,
    ("Pod", "label"): POD_LABELS,
    ("Pod", "annotation"): POD_ANNOTATIONS,
    (keys.PROFILE_KIND, "label"): PROFILE_LABELS,
    (keys.PROFILE_KIND, "annotation"): PROFILE_ANNOTATIONS,
}


@functools.lru_cache(maxsize=4096)
def _ours(key: str) -> bool:
    """A key under one of this project's prefixes, or under a prefix a typo away from one."""
    prefix, slash, _ = key.rpartition("/")
    if not slash:
        return False
    return prefix in OUR_PREFIXES or bool(difflib.get_close_matches(prefix, OUR_PREFIXES, 1, 0.8))


@functools.lru_cache(maxsize=4096)
def _key_hint(key: str, kind: str, place: str) -> str | None:
    """Why ``key`` is not read as a ``place`` of a ``kind``; None when it is, or is not ours."""
    known = KNOWN_KEYS[(kind, place)]
    if key in known or not _ours(key):
        return None
    elsewhere = [
        f"{other_kind} {other_place}s"
        for (other_kind, other_place), names in KNOWN_KEYS.items()
        if key in names and (other_kind, other_place) != (kind, place)
    ]
    if elsewhere:
        return f"it is read in {' and '.join(elsewhere)} only"
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    return f"did you mean {close[0]}?" if close else "this project reads no such key"


def _keys_of(value: Any) -> list[str]:
    return [str(key) for key in value] if isinstance(value, Mapping) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def object_findings(kind: str, raw: Mapping[str, Any]) -> list[Finding]:
    """The warnings about one ElasticQuota, ElasticQuotaProfile or Pod as written."""
    metadata = _mapping(raw.get("metadata"))
    ref = object_ref(kind, str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
    found: list[Finding] = []

    def warn(rule: str, message: str) -> None:
        found.append(Finding(ref, message, rule=rule, source="schema", severity=WARNING))

    if kind in FIELDS:
        for path, hint in _unknown_fields(raw, FIELDS[kind], ""):
            warn("unknown-field", f"unknown field {path}: not in the {kind} schema{hint}")
    spec = _mapping(raw.get("spec"))
    places: list[tuple[str, str, Any, str]] = [
        ("label", "metadata.labels", metadata.get("labels"), kind),
        ("annotation", "metadata.annotations", metadata.get("annotations"), kind),
    ]
    if kind == keys.PROFILE_KIND:
        places.append(("label", "spec.quotaLabels", spec.get("quotaLabels"), keys.QUOTA_KIND))
    for place, where, values, read_as in places:
        if (read_as, place) not in KNOWN_KEYS:
            continue
        for key in _keys_of(values):
            why = _key_hint(key, read_as, place)
            if why is not None:
                warn(f"unknown-{place}", f"unknown {place} key {key} in {where}: {why}")
    if kind == keys.QUOTA_KIND:
        for part in ("min", "max"):
            for name in _keys_of(spec.get(part)):
                if not is_resource_name(name):
                    warn("resource-name", f"unknown resource name {name!r} in spec.{part}: "
                         f"{_resource_hint(name)} ({RESOURCE_NAME_RULE})")  # fmt: skip
    return found


def manifest_findings(
    quotas: Iterable[Mapping[str, Any]],
    profiles: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
) -> list[Finding]:
    """``object_findings`` of every quota, profile and pod, in that order."""
    found: list[Finding] = []
    for kind, raws in ((keys.QUOTA_KIND, quotas), (keys.PROFILE_KIND, profiles), ("Pod", pods)):
        for raw in raws:
            found += object_findings(kind, raw)
    return found
