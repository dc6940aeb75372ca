"""Admission rules for ElasticQuotas and Pods: the reference's webhooks (§4), as pure functions.

Each ``validate_*`` takes the object under review as the API server sends it (a raw dict: it may be
broken in ways the typed models cannot even hold, such as a negative min) and a read-only
``ClusterView`` of the quotas and pods the operator knows, and returns every rule the request
breaks; an empty list means "allowed". Messages name the quota, the rule and the numbers, in the
reference's wording where it has one so that Koordinator users recognise them. Unlike the
reference, which stops at its first error, every independent violation is reported.

Extensions of this project are checked too: parent cycles (the reference cannot meet one, its
topology is built by its own admissions), the lending / borrowing limit annotations, and malformed
JSON in the ``namespaces`` annotation (the reference silently ignores it).

Nothing here does I/O: the Kopf handlers (``elasticquota.controller.webhooks``) build the view
from the operator's memory, call these functions and turn violations into admission errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from elasticquota.core import keys
from elasticquota.core.models import PodInfo
from elasticquota.core.quantity import QuantityError, format_units, parse_units
from elasticquota.core.resources import ResourceList, add, parse_resource_list_json

LABEL_ALLOW_FORCE_UPDATE: Final = f"{keys.PREFIX}/allow-force-update"
ANNO_MAX_STRICT_CHECK_KEYS: Final = f"{keys.PREFIX}/max-strict-check-resource-keys"
#: What an UPDATE must change for the rules to run at all (§4.2 step 0, plus our limits).
_WATCHED_LABELS: Final = (*keys.LABEL_PARENT_ALIASES, keys.LABEL_IS_PARENT, keys.LABEL_TREE_ID)
_WATCHED_ANNOTATIONS: Final = (
    keys.ANNO_NAMESPACES,
    keys.ANNO_LENDING_LIMIT,
    keys.ANNO_BORROWING_LIMIT,
)
_KEY_CHECK: Final = (
    "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey failed: "
)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: a short rule id (for tests and logs) and the message for the user."""

    rule: str
    message: str


# -- reading objects ----------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True, slots=True)
class QuotaFacts:
    """What the rules read of one ElasticQuota, quantities in engine units."""

    name: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    min: ResourceList
    max: ResourceList
    used: ResourceList
    namespaces: tuple[str, ...] = ()
    #: The quantities as written, for messages (``"-1"`` rather than ``-1000`` millicores).
    written: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def parent(self) -> str:
        """The parent's name: the label (or its alias), the virtual root when empty."""
        if self.name == keys.ROOT_QUOTA:
            return ""
        for key in keys.LABEL_PARENT_ALIASES:
            if self.labels.get(key):
                return self.labels[key]
        return keys.ROOT_QUOTA

    @property
    def is_parent(self) -> bool:
        return self.labels.get(keys.LABEL_IS_PARENT) == "true"

    @property
    def tree_id(self) -> str:
        return self.labels.get(keys.LABEL_TREE_ID, "")

    @property
    def is_root(self) -> bool:
        return self.labels.get(keys.LABEL_IS_ROOT) == "true"

    @property
    def force_update(self) -> bool:
        return self.labels.get(LABEL_ALLOW_FORCE_UPDATE) == "true"


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items() if v is not None}


def _resources(
    quota: str, where: str, raw: Any, found: list[Violation]
) -> tuple[ResourceList, dict[str, Any]]:
    """Parse a ResourceList key by key: a bad quantity is a violation and counts as 0."""
    result: ResourceList = {}
    written = dict(_mapping(raw))
    for name, value in written.items():
        try:
            result[name] = parse_units(name, value)
        except QuantityError as error:
            found.append(Violation("quantity", f"{quota} {where}.{name}: {error}"))
            result[name] = 0
    return result, written


def _namespaces(
    quota: str, annotations: Mapping[str, str], found: list[Violation]
) -> tuple[str, ...]:
    text = annotations.get(keys.ANNO_NAMESPACES, "")
    if not text:
        return ()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        value = error
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    found.append(
        Violation(
            "namespaces-annotation",
            f"{quota} annotation {keys.ANNO_NAMESPACES}: expected a JSON list of namespace names, "
            f"got {text!r}",
        )
    )
    return ()


def object_name(raw: Mapping[str, Any]) -> str:
    """``metadata.name``, else ``generateName`` (the API server has not named the object yet)."""
    metadata = _mapping(raw.get("metadata"))
    return str(metadata.get("name") or metadata.get("generateName") or "")


def read_quota(raw: Mapping[str, Any]) -> tuple[QuotaFacts, list[Violation]]:
    """The facts of a raw ElasticQuota, and what is unreadable in it."""
    metadata = _mapping(raw.get("metadata"))
    name = object_name(raw)
    spec = _mapping(raw.get("spec"))
    found: list[Violation] = []
    minimum, written_min = _resources(name, "spec.min", spec.get("min"), found)
    maximum, written_max = _resources(name, "spec.max", spec.get("max"), found)
    used, written_used = _resources(
        name, "status.used", _mapping(raw.get("status")).get("used"), []
    )
    annotations = _string_map(metadata.get("annotations"))
    facts = QuotaFacts(
        name=name,
        namespace=str(metadata.get("namespace") or ""),
        labels=_string_map(metadata.get("labels")),
        annotations=annotations,
        spec=spec,
        min=minimum,
        max=maximum,
        used=used,
        namespaces=_namespaces(name, annotations, found),
        written={"min": written_min, "max": written_max, "used": written_used},
    )
    return facts, found


def _parent_label(raw: Mapping[str, Any]) -> str:
    labels = _mapping(_mapping(raw.get("metadata")).get("labels"))
    for key in keys.LABEL_PARENT_ALIASES:
        if labels.get(key):
            return str(labels[key])
    return keys.ROOT_QUOTA


QuotaKey = tuple[str, str]


class QuotaCatalog:
    """The quotas, indexed by object, by name, by parent and by annotated namespace.

    Kept current one object at a time (``upsert`` / ``remove``), so that a long-lived catalog
    costs nothing per request; a quota is parsed on first use and again only when it changes.
    Quota names are global, as in the reference; of quotas sharing a name the first by namespace
    is "the" quota of that name.
    """

    def __init__(self, quotas: Iterable[Mapping[str, Any]] = ()) -> None:
        self._raw: dict[QuotaKey, Mapping[str, Any]] = {}
        self._facts: dict[QuotaKey, QuotaFacts] = {}
        self._by_name: dict[str, set[QuotaKey]] = {}
        self._children: dict[str, dict[QuotaKey, str]] = {}
        self._namespaces: dict[QuotaKey, tuple[str, ...]] = {}
        self._owners: dict[str, set[QuotaKey]] = {}
        for raw in quotas:
            self.upsert(raw)

    @staticmethod
    def key_of(raw: Mapping[str, Any]) -> QuotaKey:
        return str(_mapping(raw.get("metadata")).get("namespace") or ""), object_name(raw)

    def upsert(self, raw: Mapping[str, Any]) -> None:
        key = self.key_of(raw)
        self.remove(key)
        name = key[1]
        self._raw[key] = raw
        self._by_name.setdefault(name, set()).add(key)
        if name != keys.ROOT_QUOTA:
            self._children.setdefault(_parent_label(raw), {})[key] = name
        annotations = _string_map(_mapping(raw.get("metadata")).get("annotations"))
        self._namespaces[key] = _namespaces(name, annotations, [])
        for namespace in self._namespaces[key]:
            self._owners.setdefault(namespace, set()).add(key)

    def remove(self, key: QuotaKey) -> None:
        raw = self._raw.pop(key, None)
        if raw is None:
            return
        self._facts.pop(key, None)
        _discard(self._by_name, key[1], key)
        if key[1] != keys.ROOT_QUOTA:
            siblings = self._children.get(_parent_label(raw), {})
            siblings.pop(key, None)
        for namespace in self._namespaces.pop(key, ()):
            _discard(self._owners, namespace, key)

    def __len__(self) -> int:
        return len(self._raw)

    def quota_at(self, namespace: str, name: str) -> QuotaFacts | None:
        key = (namespace, name)
        if key not in self._facts:
            raw = self._raw.get(key)
            if raw is None:
                return None
            self._facts[key] = read_quota(raw)[0]
        return self._facts[key]

    def key_named(self, name: str) -> QuotaKey | None:
        keys_ = self._by_name.get(name)
        return min(keys_) if keys_ else None

    def children(self, name: str) -> list[str]:
        return sorted(set(self._children.get(name, {}).values()) - {name})

    def namespace_owner(self, namespace: str) -> str | None:
        owners = self._owners.get(namespace)
        return min(owners)[1] if owners else None


def _discard(index: dict[str, set[QuotaKey]], name: str, key: QuotaKey) -> None:
    members = index.get(name)
    if members is not None:
        members.discard(key)
        if not members:
            del index[name]


class ClusterView:
    """What the rules read: the quotas (a ``QuotaCatalog``) and the pods, read-only.

    Only a DELETE or an ``is-parent`` change looks at the pods, so they are listed on first use.
    """

    def __init__(
        self, quotas: QuotaCatalog | Iterable[Mapping[str, Any]], pods: Iterable[PodInfo] = ()
    ) -> None:
        self._catalog = quotas if isinstance(quotas, QuotaCatalog) else QuotaCatalog(quotas)
        self._pod_source = pods
        self._pods: tuple[PodInfo, ...] | None = None

    def quota(self, name: str) -> QuotaFacts | None:
        """The quota of that name (any namespace)."""
        key = self._catalog.key_named(name)
        return None if key is None else self._catalog.quota_at(*key)

    def quota_at(self, namespace: str, name: str) -> QuotaFacts | None:
        """The stored copy of exactly this object."""
        return self._catalog.quota_at(namespace, name)

    def children(self, name: str) -> list[str]:
        """Names of the quotas whose parent label names ``name``, sorted."""
        return self._catalog.children(name)

    def namespace_owner(self, namespace: str) -> str | None:
        """The quota whose ``namespaces`` annotation lists ``namespace``."""
        return self._catalog.namespace_owner(namespace)

    @property
    def pods(self) -> tuple[PodInfo, ...]:
        """Every known pod, by ``namespace/name``."""
        if self._pods is None:
            self._pods = tuple(sorted(self._pod_source, key=lambda pod: pod.key))
        return self._pods

    def pods_labelled(self, quota: str) -> list[PodInfo]:
        """Pods whose quota label names ``quota`` (the only pods DELETE looks at, §4.5)."""
        return [pod for pod in self.pods if pod.quota_label == quota]

    def pods_bound(self, quota: str, namespaces: Iterable[str]) -> list[PodInfo]:
        """Pods labelled with ``quota``, in the namespace named ``quota`` or in ``namespaces``."""
        wanted = {quota, *namespaces}
        return [pod for pod in self.pods if pod.quota_label == quota or pod.namespace in wanted]


# -- formatting ---------------------------------------------------------------------------------


def _names(items: Iterable[str]) -> str:
    """Go's ``%v`` of a slice, as the reference prints resource names: ``[cpu memory]``."""
    return "[" + " ".join(items) + "]"


def _amounts(resources: Mapping[str, int], names: Iterable[str]) -> str:
    return ", ".join(f"{name} {format_units(name, resources.get(name, 0))}" for name in names)


def _written(quota: QuotaFacts, where: str, name: str) -> str:
    value = quota.written.get(where, {}).get(name)
    if value is None:
        return format_units(name, getattr(quota, where).get(name, 0))
    return str(value)


def _list_some(items: list[str], shown: int = 2) -> str:
    """The reference's pod list: up to two names, then ``...``."""
    return ", ".join(items if len(items) <= shown else [*items[:shown], "..."])


# -- self-item checks (§4.3) and the limit annotations -------------------------------------------


def _negatives(quota: QuotaFacts, where: str, label: str) -> list[Violation]:
    values: ResourceList = getattr(quota, where)
    negative = sorted(name for name, value in values.items() if value < 0)
    if not negative:
        return []
    written = ", ".join(f"{name}={_written(quota, where, name)}" for name in negative)
    return [
        Violation(
            f"negative-{where}",
            f"{quota.name} quota.Spec.{label}'s value < 0, in dimensions :{_names(negative)} "
            f"({written})",
        )
    ]


def _annotation_list(
    quota: QuotaFacts, key: str, rule: str, reference_wording: bool = False
) -> tuple[ResourceList | None, list[Violation]]:
    """A ResourceList annotation: parsed, or a violation; None when absent or empty."""
    text = quota.annotations.get(key, "")
    if not text:
        return None, []
    try:
        values = parse_resource_list_json(text)
    except QuantityError as error:
        where = f"quota.Annotation[{key}]'s value" if reference_wording else f"annotation {key}"
        return None, [Violation(rule, f"{quota.name} {where} is invalid: {error}")]
    return values, []


def _shared_weight(quota: QuotaFacts) -> list[Violation]:
    key = keys.ANNO_SHARED_WEIGHT
    weight, found = _annotation_list(quota, key, "shared-weight", reference_wording=True)
    if weight is None:
        return found
    negative = sorted(name for name, value in weight.items() if value < 0)
    if negative:
        found.append(
            Violation(
                "shared-weight",
                f"{quota.name} quota.Annotation[{key}]'s value < 0, in dimension "
                f":{_names(negative)} ({_amounts(weight, negative)})",
            )
        )
    return found


def _min_within_max(quota: QuotaFacts) -> list[Violation]:
    found = []
    for name in sorted(quota.min):
        if name not in quota.max:
            found.append(
                Violation(
                    "min-key-in-max",
                    f"resourceKey {name} of quota {quota.name} is included in min, which is not "
                    "included in max",
                )
            )
        elif quota.min[name] > quota.max[name]:
            found.append(
                Violation(
                    "min-le-max",
                    f"resourceKey {name} of quota {quota.name} min "
                    f"{_written(quota, 'min', name)} > max {_written(quota, 'max', name)}",
                )
            )
    return found


def _max_strict_keys(quota: QuotaFacts) -> list[Violation]:
    """``max-strict-check-resource-keys``: for those keys, max must stay at or above used."""
    text = quota.annotations.get(ANNO_MAX_STRICT_CHECK_KEYS, "")
    if not text:
        return []
    try:
        names = json.loads(text)
    except json.JSONDecodeError:
        names = None
    if not isinstance(names, list) or not all(isinstance(item, str) for item in names):
        return [
            Violation(
                "max-strict-keys",
                f"{quota.name} quota.Annotation[{ANNO_MAX_STRICT_CHECK_KEYS}]'s value is invalid: "
                f"expected a JSON list of resource names, got {text!r}",
            )
        ]
    found = []
    for name in names:
        if name not in quota.used:
            continue  # never used: nothing to compare
        if name not in quota.max:
            message = (
                f"resourceKey {name} of quota {quota.name} is included in used, which is not "
                "included in max but should check max >= used"
            )
            found.append(Violation("max-strict-keys", message))
        elif quota.max[name] < quota.used[name]:
            found.append(
                Violation(
                    "max-strict-keys",
                    f"resourceKey {name} of quota {quota.name} max {_written(quota, 'max', name)} "
                    f"< used {_written(quota, 'used', name)}",
                )
            )
    return found


def _limits(quota: QuotaFacts) -> list[Violation]:
    """The extension annotations: valid, non-negative ResourceLists; lending at most min."""
    found: list[Violation] = []
    for key, rule in ((keys.ANNO_LENDING_LIMIT, "lending-limit"),
                      (keys.ANNO_BORROWING_LIMIT, "borrowing-limit")):  # fmt: skip
        values, problems = _annotation_list(quota, key, rule)
        found += problems
        if values is None:
            continue
        negative = sorted(name for name, value in values.items() if value < 0)
        if negative:
            found.append(
                Violation(
                    rule,
                    f"{quota.name} annotation {key} has negative values: "
                    f"{_amounts(values, negative)}",
                )
            )
        if rule == "lending-limit":
            above = sorted(n for n, v in values.items() if v > max(quota.min.get(n, 0), 0))
            for name in above:
                found.append(
                    Violation(
                        rule,
                        f"{quota.name} lending limit {name} {format_units(name, values[name])} > "
                        f"min {format_units(name, quota.min.get(name, 0))}: a quota can lend at "
                        "most its min",
                    )
                )
    return found


def self_item_violations(quota: QuotaFacts) -> list[Violation]:
    """Every rule about the quota alone (§4.3), plus the lending / borrowing limits."""
    return [
        *_negatives(quota, "max", "Max"),
        *_negatives(quota, "min", "Min"),
        *_shared_weight(quota),
        *_min_within_max(quota),
        *_max_strict_keys(quota),
        *_limits(quota),
    ]


# -- topology checks (§4.4) -----------------------------------------------------------------------


def _is_parent_change(
    quota: QuotaFacts, stored: QuotaFacts | None, view: ClusterView, old_namespaces: Iterable[str]
) -> list[Violation]:
    if stored is None or stored.is_parent == quota.is_parent:
        return []
    if not quota.is_parent:
        children = view.children(stored.name)
        if children:
            return [
                Violation(
                    "is-parent-change",
                    "quota has children, isParent is forbidden to modify as false, quotaName:"
                    f"{stored.name} ({len(children)} child quotas: {', '.join(children)})",
                )
            ]
        return []
    pods = view.pods_bound(stored.name, old_namespaces)
    if not pods:
        return []
    return [
        Violation(
            "is-parent-change",
            "quota has bound pods, isParent is forbidden to modify as true, quotaName: "
            f"{stored.name} ({len(pods)} pods: {_list_some([pod.key for pod in pods])})",
        )
    ]


def _tree_ids(quota: QuotaFacts, stored: QuotaFacts | None, view: ClusterView) -> list[Violation]:
    found = []
    name, own = quota.name, quota.tree_id
    if stored is not None and stored.tree_id != own:
        found.append(Violation("tree-id", f"{name} tree id changed [{stored.tree_id}] vs [{own}]"))
    parent = view.quota(quota.parent) if quota.parent != keys.ROOT_QUOTA else None
    if parent is not None and parent.tree_id != own:
        found.append(
            Violation(
                "tree-id",
                f"{name} tree id is different from parent {parent.name}, [{own}] vs "
                f"[{parent.tree_id}]",
            )
        )
    for child_name in view.children(name):
        child = view.quota(child_name)
        if child is not None and child.tree_id != own:
            found.append(
                Violation(
                    "tree-id",
                    f"{name} tree id is different from child {child_name}, [{own}] vs "
                    f"[{child.tree_id}]",
                )
            )
    return found


def _parent_chain(quota: QuotaFacts, view: ClusterView) -> list[str] | None:
    """The ancestors up to the quota itself when its new parent makes a cycle, else None."""
    chain = [quota.name]
    current = quota.parent
    while current not in (keys.ROOT_QUOTA, ""):
        chain.append(current)
        if current == quota.name:
            return chain
        if chain.count(current) > 1:
            return None  # a cycle above us, not through us: reported on its own members
        facts = view.quota(current)
        if facts is None:
            return None
        current = facts.parent
    return None


def _parent(quota: QuotaFacts, view: ClusterView) -> tuple[QuotaFacts | None, list[Violation]]:
    """The parent when it is usable (exists, is a parent, no cycle), and what is wrong with it."""
    name, parent_name = quota.name, quota.parent
    cycle = _parent_chain(quota, view)
    if cycle is not None:
        return None, [
            Violation(
                "cycle",
                f"{name} has parentName {parent_name}, which makes a cycle: {' -> '.join(cycle)}",
            )
        ]
    parent = view.quota(parent_name)
    if parent is None:
        return None, [
            Violation(
                "parent-exists",
                f"{name} has parentName {parent_name} but not find parentInfo in quotaInfoMap",
            )
        ]
    if not parent.is_parent:
        return None, [
            Violation(
                "parent-is-parent",
                f"{name} has parentName {parent_name} but the parentQuotaInfo's IsParent is false",
            )
        ]
    return parent, []


def _same_max_keys(
    upper: QuotaFacts, lower: QuotaFacts, first: str, second: str
) -> list[Violation]:
    if set(upper.max) == set(lower.max):
        return []
    return [
        Violation(
            "max-keys",
            f"{_KEY_CHECK}{first}'s max keys are not the same with {second}'s "
            f"({upper.name}: {_names(sorted(upper.max))}, {lower.name}: "
            f"{_names(sorted(lower.max))})",
        )
    ]


def _min_keys_included(upper: QuotaFacts, lower: QuotaFacts) -> list[Violation]:
    missing = sorted(set(lower.min) - set(upper.min))
    if not missing:
        return []
    return [
        Violation(
            "min-keys",
            f"{_KEY_CHECK}{lower.name}'s min keys are not all included in {upper.name}'s "
            f"({_names(missing)} missing from {upper.name}'s min)",
        )
    ]


def _resource_keys(
    quota: QuotaFacts, parent: QuotaFacts | None, view: ClusterView
) -> list[Violation]:
    """The default gate (``ElasticQuotaEnableUpdateResourceKey`` off): identical max key sets
    along every edge; min keys of a child within its parent's."""
    found = []
    if parent is not None:
        found += _same_max_keys(parent, quota, parent.name, quota.name)
        found += _min_keys_included(parent, quota)
    for child_name in view.children(quota.name):
        child = view.quota(child_name)
        if child is not None:
            found += _same_max_keys(quota, child, child_name, quota.name)
            found += _min_keys_included(quota, child)
    return found


def _sum_min(view: ClusterView, names: Iterable[str]) -> ResourceList:
    total: ResourceList = {}
    for name in names:
        facts = view.quota(name)
        if facts is not None:
            total = add(total, facts.min)
    return total


def _over(total: ResourceList, limit: ResourceList) -> list[str]:
    return sorted(name for name, value in total.items() if value > limit.get(name, 0))


def _min_sums(quota: QuotaFacts, parent: QuotaFacts | None, view: ClusterView) -> list[Violation]:
    """Σ children's min ≤ parent's min, below the top level (skipped with allow-force-update or
    is-root)."""
    if quota.force_update or quota.is_root:
        return []
    found = []
    if parent is not None:
        siblings = [name for name in view.children(parent.name) if name != quota.name]
        total = add(_sum_min(view, siblings), quota.min)
        over = _over(total, parent.min)
        if over:
            found.append(
                Violation(
                    "min-sum",
                    "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: "
                    f"{parent.name} (sum of its children's min with {quota.name}: "
                    f"{_amounts(total, over)}; {parent.name}'s min: {_amounts(parent.min, over)})",
                )
            )
    children = view.children(quota.name)
    total = _sum_min(view, children)
    over = _over(total, quota.min)
    if children and over:
        found.append(
            Violation(
                "min-sum",
                "checkMinQuotaSum all children's MinQuota > current MinQuota, current: "
                f"{quota.name} (sum of its children's min: {_amounts(total, over)}; "
                f"its min: {_amounts(quota.min, over)})",
            )
        )
    return found


def topology_violations(
    quota: QuotaFacts,
    stored: QuotaFacts | None,
    view: ClusterView,
    old_namespaces: Iterable[str] = (),
) -> list[Violation]:
    """§4.4 in order; ``stored`` is the operator's copy on UPDATE, None on CREATE."""
    if quota.name == keys.ROOT_QUOTA:
        return []
    found = [
        *_is_parent_change(quota, stored, view, old_namespaces),
        *_tree_ids(quota, stored, view),
    ]
    if quota.parent == keys.ROOT_QUOTA and not quota.is_parent:
        return found  # a top-level leaf: nothing above or below to compare with
    parent = None
    if quota.parent != keys.ROOT_QUOTA:
        parent, problems = _parent(quota, view)
        found += problems
        if problems:
            return found
    found += _resource_keys(quota, parent, view)
    found += _min_sums(quota, parent, view)
    return found


# -- requests -------------------------------------------------------------------------------------


def _namespaces_free(quota: QuotaFacts, view: ClusterView, operation: str) -> list[Violation]:
    found = []
    for namespace in quota.namespaces:
        owner = view.namespace_owner(namespace)
        if owner is None or owner == quota.name:
            continue
        if operation == "CREATE":
            message = (
                f"AddQuota quota {quota.name}'s annotation namespace {namespace} is already "
                f"bound to quota {owner}"
            )
        else:
            message = (
                f"UpdateQuota, quota {quota.name} update namespaces, but namespace {namespace} "
                f"is already bound to quota {owner}"
            )
        found.append(Violation("namespaces-unique", message))
    return found


def validate_quota_create(new: Mapping[str, Any], view: ClusterView) -> list[Violation]:
    """§4.1: a new name, free namespaces, then the self-item and topology checks."""
    quota, found = read_quota(new)
    existing = view.quota(quota.name)
    if existing is not None:
        found.append(
            Violation(
                "name-unique",
                f"AddQuota quota already exist:{quota.name} (in namespace {existing.namespace}; "
                "quota names are unique across namespaces)",
            )
        )
    found += _namespaces_free(quota, view, "CREATE")
    found += self_item_violations(quota)
    found += topology_violations(quota, None, view)
    return found


def quota_unchanged(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """§4.2 step 0: nothing the rules look at changed (annotation and status writes pass)."""

    def watched(raw: Mapping[str, Any]) -> tuple[Any, ...]:
        metadata = _mapping(raw.get("metadata"))
        labels = _mapping(metadata.get("labels"))
        annotations = _mapping(metadata.get("annotations"))
        return (
            tuple(labels.get(key) or "" for key in _WATCHED_LABELS),
            tuple(annotations.get(key) or "" for key in _WATCHED_ANNOTATIONS),
            dict(_mapping(raw.get("spec"))),
        )

    return watched(old) == watched(new)


def validate_quota_update(
    old: Mapping[str, Any], new: Mapping[str, Any], view: ClusterView
) -> list[Violation]:
    """§4.2: reserved quotas are frozen, namespaces stay unique, then the checks against the
    stored copy."""
    if quota_unchanged(old, new):
        return []
    quota, found = read_quota(new)
    if quota.name in (keys.ROOT_QUOTA, keys.SYSTEM_QUOTA):
        return [
            Violation(
                "reserved-update",
                f"invalid quota {quota.name}: the root and system quotas cannot be updated",
            )
        ]
    found += _namespaces_free(quota, view, "UPDATE")
    stored = view.quota_at(quota.namespace, quota.name)
    if stored is None:
        found.append(
            Violation("known", f"UpdateQuota quota not exist in quotaInfoMap:{quota.name}")
        )
        return found
    old_namespaces = read_quota(old)[0].namespaces
    found += self_item_violations(quota)
    found += topology_violations(quota, stored, view, old_namespaces)
    return found


def validate_quota_delete(old: Mapping[str, Any], view: ClusterView) -> list[Violation]:
    """§4.5: reserved quotas stay; a quota with child quotas or labelled pods stays."""
    quota = read_quota(old)[0]
    name = quota.name
    if name in keys.RESERVED_QUOTAS:
        return [Violation("reserved-delete", f"can not delete quotaGroup :{name}")]
    if view.quota_at(quota.namespace, name) is None:
        return [Violation("known", f"not found quota:{name}")]
    found = []
    children = view.children(name)
    if children:
        found.append(
            Violation(
                "delete-children",
                f"delete quota failed, quota {name} has {len(children)} child quotas: "
                f"{', '.join(children)}",
            )
        )
    pods = view.pods_labelled(name)
    if pods:
        found.append(
            Violation(
                "delete-pods",
                f"delete quota failed, quota {name} has {len(pods)} child pods: "
                f"{_list_some([pod.key for pod in pods])}",
            )
        )
    return found


# -- pods (§4.6) ----------------------------------------------------------------------------------


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(_mapping(raw.get("metadata")).get("labels"))


def pod_quota(pod: Mapping[str, Any], view: ClusterView) -> str:
    """The quota a pod belongs to (README "Pod → quota"): an unknown quota means the default."""
    labels = _labels(pod)
    namespace = str(_mapping(pod.get("metadata")).get("namespace") or "")
    for key in keys.POD_LABEL_QUOTA_ALIASES:
        if labels.get(key):
            label = str(labels[key])
            return label if view.quota(label) is not None else keys.DEFAULT_QUOTA
    same_name = view.quota_at(namespace, namespace)
    if same_name is not None:
        return same_name.name
    return view.namespace_owner(namespace) or keys.DEFAULT_QUOTA


def validate_pod(
    new: Mapping[str, Any], old: Mapping[str, Any] | None, view: ClusterView
) -> list[Violation]:
    """No pods in parent quotas; the ``preemptible`` label never changes (§4.6).

    Deviation: an UPDATE that leaves the pod in the same quota is not refused for being in a
    parent quota (the reference re-checks every update): a pod admitted before the webhooks, or
    before its quota became a parent, must still be able to drop a finalizer or a scheduling gate.
    """
    found = []
    name = object_name(new)
    quota_name = pod_quota(new, view)
    quota = view.quota(quota_name) if quota_name != keys.DEFAULT_QUOTA else None
    moved = old is None or pod_quota(old, view) != quota_name
    if quota is not None and quota.is_parent and moved:
        found.append(
            Violation(
                "pod-in-parent",
                f"pod can not be linked to a parentQuotaGroup,quota:{quota_name}, pod:{name}",
            )
        )
    if old is not None:
        key = keys.POD_LABEL_PREEMPTIBLE
        before, after = _labels(old).get(key) or "", _labels(new).get(key) or ""
        if before != after:
            found.append(
                Violation(
                    "preemptible-label",
                    f"Preemptible label is forbidden modify now. (pod {name}: {key} "
                    f"{before!r} -> {after!r})",
                )
            )
    return found
