"""Node affinity for pods of profile trees: a profile's pods run on its nodes.

The profile's ``nodeSelector`` becomes node-selector requirements (each matchLabels ``k: v`` as
``k In [v]``, each matchExpressions entry as it is) appended to every required node-affinity term of
the pod, or a single new term when it has none; an empty ``nodeSelector`` (every node) adds
nothing. Pure: it returns the pod's new ``affinity``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from elasticquota.core.model.models import ProfileSpec


def selector_requirements(profile: ProfileSpec) -> list[dict[str, Any]]:
    """The profile's node selector as matchExpressions."""
    requirements: list[dict[str, Any]] = [
        {"key": key, "operator": "In", "values": [value]}
        for key, value in sorted(profile.node_selector.match_labels.items())
    ]
    for item in profile.node_selector.match_expressions:
        requirement: dict[str, Any] = {"key": item.key, "operator": item.operator}
        if item.values:
            requirement["values"] = list(item.values)
        requirements.append(requirement)
    return requirements


def affinity_with_profile(pod: Mapping[str, Any], profile: ProfileSpec) -> dict[str, Any] | None:
    """The pod's affinity with the profile's node requirements added to every required term;
    None when the profile's selector is empty (every node: nothing to add, where the reference
    adds an empty term, which matches no node).

    A part the pod leaves null (``nodeSelectorTerms: null``, as the API server sends a required
    node affinity written as ``{}``) counts as absent, as in the reference."""
    requirements = selector_requirements(profile)
    if not requirements:
        return None
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    affinity: dict[str, Any] = copy.deepcopy(dict(spec.get("affinity") or {}))
    node_affinity = affinity["nodeAffinity"] = dict(affinity.get("nodeAffinity") or {})
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    required = node_affinity[key] = dict(node_affinity.get(key) or {})
    terms = [dict(term or {}) for term in required.get("nodeSelectorTerms") or []] or [{}]
    for term in terms:
        term["matchExpressions"] = [
            *(term.get("matchExpressions") or []),
            *requirements,
        ]
    required["nodeSelectorTerms"] = terms
    return affinity
