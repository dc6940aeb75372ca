"""A whole set of manifests judged by the quota and pod webhooks' own rules (``plan``'s gate).

The webhooks judge one request against the objects the cluster already has. A repository of
manifests has no "already": each quota is judged as its CREATE would be, against all the others
(as if they were in the cluster; one view of the whole set serves every judgement, the rules
never count a quota against itself), with the same functions the webhook handlers call
(``controller.webhooks.admission``): first the mutating webhook's defaults (``quota_defaults``:
the parent label, the tree id inherited from the parent, the shared weight), whose refusal ends
the request as the API server ends it; then ``validate_quota_create`` on the defaulted object.
Pods are judged as their CREATE (``validate_pod``) against the defaulted quotas.

What follows from judging each object against all the others:

* a rule between two objects (the min sum of siblings, the max keys along an edge, a namespace
  claimed twice) is reported on every object it involves, each with the webhook's message for a
  request about that object;
* of quotas sharing a name, the one that keeps it (the owner rule of ``QuotaCatalog``, the
  engine's) is not told that its name is taken: the others are; of quotas whose ``namespaces``
  annotations list one namespace, the first by namespace/name keeps it and the others are told
  it is bound to that one;
* the rules about a change (UPDATE and DELETE: frozen reserved quotas, a changed tree id, an
  ``is-parent`` flip, deleting a quota with children or pods, the preemptible label) need the
  stored object and are not applied to a set of manifests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elasticquota.core import keys
from elasticquota.core.decisions.mutation import quota_defaults
from elasticquota.core.validation.facts import Violation, mapping_or_empty
from elasticquota.core.validation.pods import validate_pod
from elasticquota.core.validation.requests import validate_quota_create
from elasticquota.core.validation.view import ClusterView, QuotaCatalog

#: The rules that judge a change to a stored object; a set of manifests cannot break them.
CHANGE_ONLY_RULES = frozenset(
    {
        "reserved-update",
        "known",
        "reserved-delete",
        "delete-children",
        "delete-pods",
        "is-parent-change",
        "preemptible-label",
    }
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """One rule the webhook would refuse an object of the set for."""

    kind: str
    """``ElasticQuota`` or ``Pod``."""
    namespace: str
    name: str
    violation: Violation
    webhook: str
    """Which webhook answers: ``mutate-elasticquota``, ``validate-elasticquota``,
    ``validate-pod``."""


def with_defaults(raw: Mapping[str, Any], labels: Mapping[str, str],
                  annotations: Mapping[str, str]) -> dict[str, Any]:  # fmt: skip
    """``raw`` with the mutating webhook's labels and annotations written in (its patch)."""
    metadata = dict(mapping_or_empty(raw.get("metadata")))
    metadata["labels"] = {**mapping_or_empty(metadata.get("labels")), **labels}
    metadata["annotations"] = {**mapping_or_empty(metadata.get("annotations")), **annotations}
    return {**raw, "metadata": metadata}


def _defaulted(quotas: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Every quota after the mutating webhook, and its defaults (the last pass's).

    A tree id is inherited from the parent, which may inherit its own from above: passes repeat
    until no label changes (at most once per level of the deepest tree)."""
    current = [dict(raw) for raw in quotas]
    defaults: list[Any] = []
    for _ in range(len(current) + 1):
        view = ClusterView(current)
        defaults = [quota_defaults(raw, view) for raw in quotas]
        updated = [
            with_defaults(raw, found.labels, found.annotations)
            for raw, found in zip(quotas, defaults, strict=True)
        ]
        if updated == current:
            break
        current = updated
    return current, defaults


def _key(raw: Mapping[str, Any]) -> tuple[str, str]:
    return QuotaCatalog.key_of(raw)


def validate_manifest_set(
    quotas: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = ()
) -> list[Refusal]:
    """Every refusal the webhooks would give the quotas and pods of a set of manifests, each
    quota judged as its CREATE against the others. One copy per namespace/name: the last."""
    unique = list({_key(raw): raw for raw in quotas}.values())
    defaulted, defaults = _defaulted(unique)
    catalog = QuotaCatalog(defaulted)
    view = ClusterView(catalog)
    found: list[Refusal] = []
    for raw, fill in zip(defaulted, defaults, strict=True):
        namespace, name = _key(raw)
        if fill.violations:
            found += [
                Refusal(keys.QUOTA_KIND, namespace, name, v, "mutate-elasticquota")
                for v in fill.violations
            ]
            continue  # the API server stops at the mutating webhook's refusal
        owner = catalog.key_named(name) == (namespace, name)
        found += [
            Refusal(keys.QUOTA_KIND, namespace, name, v, "validate-elasticquota")
            for v in validate_quota_create(raw, view)
            if not (owner and v.rule == "name-unique")
        ]
    for pod in pods:
        namespace, name = _key(pod)
        found += [
            Refusal("Pod", namespace, name, v, "validate-pod")
            for v in validate_pod(pod, None, view)
        ]
    return found
