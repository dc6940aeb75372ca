"""One ElasticQuota, the one shape every part reads: the engine, the webhook rules, the writer.

A ``Quota`` holds the object's identity (api version, namespace, name, uid, creation time), its
sections as written (labels, annotations, spec, status: what the writer diffs and the rules quote)
and the fields parsed from them (min, max, parent, shared weight, namespaces, limits, user limits:
what the engine solves and the rules check). It is built by one reader, ``core.model.quotaread``;
what each reader of it makes of an unreadable value is its own policy (the engine leaves the quota
out, ``api.parse``; a webhook refuses it, ``core.validation``).

Equality is the engine's: the parsed fields and the identity. The sections as written do not take
part (``compare=False``): a quota whose labels or annotations changed in a way that reads the same
is the same quota to the engine, which then rebuilds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from elasticquota.core.keys import DEFAULT_TREE, ROOT_QUOTA
from elasticquota.core.quantities.quantity import QuantityError, parse_units
from elasticquota.core.quantities.resources import ResourceList

DEFAULT_API_VERSION = "scheduling.sigs.k8s.io/v1alpha1"
#: The sections of the object whose quantities a message quotes as written.
WRITTEN_AT = {"min": ("spec", "min"), "max": ("spec", "max"), "used": ("status", "used")}


def _as_written() -> Any:
    """A section as written: kept, never compared (see the module docstring)."""
    return field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Quota:
    """One ElasticQuota: identity, sections as written and parsed fields (in engine units)."""

    name: str
    namespace: str
    min: ResourceList = field(default_factory=dict)
    max: ResourceList = field(default_factory=dict)
    #: The parent's name (``core.keys.parent_quota``); "" on the root quota itself.
    parent: str = ROOT_QUOTA
    is_parent: bool = False
    allow_lent: bool = True
    tree_id: str = DEFAULT_TREE
    is_root: bool = False
    ignore_default_tree: bool = False
    #: The ``shared-weight`` annotation; None (absent, unparsable or all zero) means "use max".
    shared_weight: ResourceList | None = None
    #: The ``namespaces`` annotation (empty when absent or unreadable).
    namespaces: tuple[str, ...] = ()
    #: A profile tree's total (the ``total-resource`` annotation on its root quota).
    total_resource: ResourceList | None = None
    #: Extension: at most this much of the unused min may be lent outside the subtree.
    lending_limit: ResourceList | None = None
    #: Extension: the subtree never gets more than min + borrowing limit.
    borrowing_limit: ResourceList | None = None
    #: Extension: the ``revocation-min-runtime`` annotation in seconds (None: absent or
    #: unreadable; the parent's then, else the operator's setting).
    revocation_min_runtime: float | None = None
    #: Extension: the ``preemption-min-runtime`` annotation in seconds (the same rules).
    preemption_min_runtime: float | None = None
    #: RFC 3339 creation time, used to pick the survivor among duplicated names.
    created: str = ""
    #: metadata.uid: the last tie-break among duplicated names, and what a name record names.
    uid: str = ""
    #: The ``elasticquota.dev/name-owner`` annotation (the uid of the object that owns the name).
    name_record: str = ""
    #: The ``elasticquota.dev/user-limits`` annotation as written (None: absent); parsed and
    #: checked by the engine (``core.userlimits``), once per change of the quota.
    user_limits: str | None = None
    api_version: str = field(default=DEFAULT_API_VERSION, compare=False)
    labels: Mapping[str, str] = _as_written()
    annotations: Mapping[str, str] = _as_written()
    spec: Mapping[str, Any] = _as_written()
    status: Mapping[str, Any] = _as_written()

    @property
    def holds_name_record(self) -> bool:
        """The operator recorded this very object as the owner of its name."""
        return bool(self.uid) and self.name_record == self.uid

    @property
    def ref(self) -> str:
        return f"ElasticQuota {self.namespace}/{self.name}"

    @property
    def effective_weight(self) -> ResourceList:
        """Shared weight as the reference uses it: the annotation, or max when absent or all
        zero."""
        if self.shared_weight is None or not any(self.shared_weight.values()):
            return self.max
        return self.shared_weight

    def written(self, where: str) -> Mapping[str, Any]:
        """The quantities of ``min``, ``max`` or ``used`` as written (``"-1"``, not -1000
        millicores), for messages."""
        section, key = WRITTEN_AT[where]
        values = getattr(self, section).get(key)
        return values if isinstance(values, Mapping) else {}

    @property
    def used(self) -> ResourceList:
        """``status.used`` in engine units (a bad quantity counts as 0): read on demand, since
        the operator rewrites it on every echo and only a webhook looks at it."""
        found: ResourceList = {}
        for name, value in self.written("used").items():
            try:
                found[name] = parse_units(name, value)
            except QuantityError:
                found[name] = 0
        return found

    def with_written(self, annotations: Mapping[str, str], status: Mapping[str, Any]) -> Quota:
        """This quota with other annotations and status, and nothing read again: what an echo
        of the operator's own write (it writes only its annotations and the status) becomes.
        One copy of the instance's dict (the reason ``Quota`` has no ``__slots__``): a
        field-by-field copy, or ``dataclasses.replace``, costs four times as much, and echoes
        come by the thousand per second."""
        fields = dict(self.__dict__)
        fields["annotations"] = annotations
        fields["status"] = status
        quota = object.__new__(Quota)
        object.__setattr__(quota, "__dict__", fields)
        return quota

    def identity(self) -> Quota:
        """Who the object is, whatever its spec: what a quota left out of its tree keeps (its
        name stays its own while it is being fixed)."""
        return Quota(
            name=self.name,
            namespace=self.namespace,
            created=self.created,
            uid=self.uid,
            name_record=self.name_record,
            api_version=self.api_version,
        )

    def involved(self) -> dict[str, str]:
        """The ``involvedObject`` of an Event about this quota."""
        return {
            "apiVersion": self.api_version,
            "kind": "ElasticQuota",
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
        }

    def as_manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": "ElasticQuota",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": dict(self.labels),
                "annotations": dict(self.annotations),
            },
            "spec": dict(self.spec),
        }
