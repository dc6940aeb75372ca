"""A profile tree's pods get the profile's node selector as required node affinity."""

from __future__ import annotations

from elasticquota.core.decisions.affinity import affinity_with_profile, selector_requirements
from elasticquota.core.model.models import LabelRequirement, ProfileSpec

PROFILE = ProfileSpec(
    name="gpu-pool",
    namespace="gpu",
    quota_name="gpu-root",
    match_labels={"pool": "gpu"},
    match_expressions=(
        LabelRequirement("zone", "NotIn", ("z9",)),
        LabelRequirement("fast", "Exists"),
    ),
)
REQUIREMENTS = [
    {"key": "pool", "operator": "In", "values": ["gpu"]},
    {"key": "zone", "operator": "NotIn", "values": ["z9"]},
    {"key": "fast", "operator": "Exists"},
]


def test_match_labels_become_in_requirements_and_expressions_are_copied() -> None:
    assert selector_requirements(PROFILE) == REQUIREMENTS


def test_a_pod_without_affinity_gets_one_required_term() -> None:
    affinity = affinity_with_profile({"spec": {}}, PROFILE)
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {"nodeSelectorTerms": [{"matchExpressions": REQUIREMENTS}]}


def test_every_existing_required_term_gets_the_requirements_and_the_rest_is_kept() -> None:
    own = {"key": "arch", "operator": "In", "values": ["amd64"]}
    pod = {
        "spec": {
            "affinity": {
                "podAntiAffinity": {"x": 1},
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [own]}, {"matchFields": []}]
                    }
                },
            }
        }
    }
    affinity = affinity_with_profile(pod, PROFILE)
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [own, *REQUIREMENTS]},
        {"matchFields": [], "matchExpressions": REQUIREMENTS},
    ]
    assert affinity["podAntiAffinity"] == {"x": 1}
    assert pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"] == [own]  # the input is not modified
