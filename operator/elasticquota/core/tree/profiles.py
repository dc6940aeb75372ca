"""ElasticQuotaProfile: a node pool cut out of the cluster, with one quota tree of its own.

The reference's profile controller writes the tree's root quota: min = Σ allocatable
of the selected nodes × resourceRatio for the profile's resource keys, a huge max, the tree-id /
is-root / profile labels and the ``total-resource`` annotation. ``root_quota_manifest`` computes
that object as a plain manifest, so ``plan`` and the operator produce exactly the same thing.
Of profiles naming the same quota, one writes it, and none a reserved quota (``root_owners``), in
both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from elasticquota.core import keys
from elasticquota.core.model.models import NodeInfo, Problem, ProfileSpec
from elasticquota.core.quantities.quantity import unlimited_units
from elasticquota.core.quantities.resources import (
    ResourceList,
    add,
    format_resource_list,
    to_annotation,
)

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211


def fnv1a_64(text: str) -> int:
    """64-bit FNV-1a of the UTF-8 bytes of ``text``."""
    value = _FNV_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * _FNV_PRIME) % 2**64
    return value


def profile_tree_id(profile: ProfileSpec) -> str:
    """The profile's ``tree-id`` label, else FNV-1a 64 of ``namespace/name`` in decimal."""
    return profile.tree_id_label or str(fnv1a_64(f"{profile.namespace}/{profile.name}"))


def tree_profiles(quotas: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """tree id -> profile name, from the root quotas (ElasticQuota objects or manifests) the
    profile controller labels ``is-root``, ``tree-id`` and ``profile`` (Koordinator's does too)."""
    found: dict[str, str] = {}
    for quota in quotas:
        metadata = quota.get("metadata")
        labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
        if not isinstance(labels, Mapping) or labels.get(keys.LABEL_IS_ROOT) != "true":
            continue
        tree, profile = labels.get(keys.LABEL_TREE_ID), labels.get(keys.LABEL_PROFILE)
        if isinstance(tree, str) and tree and isinstance(profile, str) and profile:
            found[tree] = profile
    return found


def root_owners(
    profiles: Iterable[ProfileSpec],
) -> tuple[list[ProfileSpec], list[tuple[ProfileSpec, Problem]]]:
    """The profiles that write their root quota, by namespace/name, and each other profile with
    the problem that says why it is ignored: of profiles naming the same quota (their namespace
    and ``quotaName``), the first by name writes it (each writing its own root over the other's
    would undo the other's write at every pass); a reserved quota is no profile's root (it would
    make the default tree's root, or the quota of pods without one, a profile tree's root)."""
    owners: dict[tuple[str, str], ProfileSpec] = {}
    ignored: list[tuple[ProfileSpec, Problem]] = []
    for profile in sorted(profiles, key=lambda p: (p.namespace, p.name)):
        name = profile.quota_name
        if name in keys.RESERVED_QUOTAS:
            ignored.append((profile, _ignored(profile, f"quota {name!r} is reserved")))
            continue
        owner = owners.setdefault((profile.namespace, name), profile)
        if owner is not profile:
            why = f"quota {name!r} is already the root of {owner.ref}"
            ignored.append((profile, _ignored(profile, why)))
    return list(owners.values()), ignored


def _ignored(profile: ProfileSpec, why: str) -> Problem:
    return Problem(profile.ref, f"{why}; this profile is ignored")


def selects(profile: ProfileSpec, node: NodeInfo) -> bool:
    """Whether the profile's nodeSelector selects the node."""
    return profile.node_selector.selects(node.labels)


def go_parse_float(text: str) -> float | None:
    """``text`` as Go's ``strconv.ParseFloat`` reads it (the reference parses the ratio so), None
    where Go refuses it. Go trims nothing and reads ASCII digits only, where Python's ``float``
    takes surrounding whitespace and any Unicode digit; Go also reads hexadecimal floats
    (``0x1p-1``), which need their ``p`` exponent."""
    if not text.isascii() or text != text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        pass
    digits = text.lstrip("+-").lower()
    if len(text) - len(digits) > 1 or not digits.startswith("0x") or "p" not in digits:
        return None
    try:
        return float.fromhex(text)
    except ValueError:
        return None


def resource_ratio(profile: ProfileSpec) -> float:
    """``resourceRatio`` when it parses (as Go parses it) as a number in (0, 1], else 1."""
    ratio = go_parse_float(profile.resource_ratio or "")
    return ratio if ratio is not None and 0 < ratio <= 1 else 1.0


def _scaled(resources: ResourceList, ratio: float) -> ResourceList:
    """The reference's truncating float multiplication, in engine units."""
    if ratio == 1.0:
        return dict(resources)
    return {name: int(float(value) * ratio) for name, value in resources.items()}


def pool_totals(
    profile: ProfileSpec, nodes: Iterable[NodeInfo]
) -> tuple[ResourceList, ResourceList]:
    """(total, unschedulable) allocatable of the selected nodes, scaled by the ratio."""
    total: ResourceList = {}
    unschedulable: ResourceList = {}
    for node in nodes:
        if not selects(profile, node):
            continue
        total = add(total, node.allocatable)
        if node.unschedulable or not node.ready:
            unschedulable = add(unschedulable, node.allocatable)
    ratio = resource_ratio(profile)
    return _scaled(total, ratio), _scaled(unschedulable, ratio)


def root_quota_manifest(
    profile: ProfileSpec,
    nodes: Iterable[NodeInfo],
    existing: Mapping[str, Any] | None = None,
    api_version: str = "scheduling.sigs.k8s.io/v1alpha1",
) -> dict[str, Any]:
    """The root ElasticQuota the profile controller would write (created, or ``existing`` updated).

    Existing labels and annotations are kept; min and max are overwritten, as in the reference.
    """
    total, unschedulable = pool_totals(profile, nodes)
    metadata = dict((existing or {}).get("metadata") or {})
    labels = dict(metadata.get("labels") or {})
    labels.update({keys.LABEL_PROFILE: profile.name, **profile.quota_labels})
    labels.update({keys.LABEL_TREE_ID: profile_tree_id(profile), keys.LABEL_IS_ROOT: "true"})
    annotations = dict(metadata.get("annotations") or {})
    annotations[keys.ANNO_TOTAL_RESOURCE] = to_annotation(total)
    annotations[keys.ANNO_UNSCHEDULABLE_RESOURCE] = to_annotation(unschedulable)
    minimum = {key: total.get(key, 0) for key in profile.resource_keys}
    # The reference's "huge max": MaxInt64 / 2000 units (cores for cpu), our "no limit" ceiling.
    maximum = {key: unlimited_units(key) for key in profile.resource_keys}
    metadata.update(
        name=profile.quota_name,
        namespace=profile.namespace,
        labels=labels,
        annotations=annotations,
    )
    return {
        "apiVersion": (existing or {}).get("apiVersion", api_version),
        "kind": keys.QUOTA_KIND,
        "metadata": metadata,
        "spec": {"min": format_resource_list(minimum), "max": format_resource_list(maximum)},
    }
