"""A profile tree's pods get the profile's node selector as required node affinity."""

from __future__ import annotations

from elasticquota.core.decisions.affinity import affinity_with_profile, selector_requirements
from elasticquota.core.model.models import LabelRequirement, LabelSelector, ProfileSpec

PROFILE = ProfileSpec(
    name="gpu-pool",
    namespace="gpu",
    quota_name="gpu-root",
    node_selector=LabelSelector(
        {"pool": "gpu"},
        (LabelRequirement("zone", "NotIn", ("z9",)), LabelRequirement("fast", "Exists")),
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


def test_null_parts_of_the_pods_node_affinity_count_as_absent() -> None:
    """The API server sends ``nodeSelectorTerms: null`` for a required node affinity written as
    ``{}`` (the field has no omitempty), and mutation runs before validation: the pod gets one term,
    as in the reference, not a failed webhook."""
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    for node_affinity in (
        None,
        {required: None},
        {required: {"nodeSelectorTerms": None}},
        {required: {"nodeSelectorTerms": [{"matchExpressions": None}]}},
    ):
        pod = {"spec": {"affinity": {"nodeAffinity": node_affinity}}}
        affinity = affinity_with_profile(pod, PROFILE)
        terms = affinity["nodeAffinity"][required]
        assert terms == {"nodeSelectorTerms": [{"matchExpressions": REQUIREMENTS}]}


def test_a_profile_of_every_node_adds_no_term() -> None:
    """``nodeSelector: {}`` selects every node (the profile's total counts them all); a term
    without requirements would match none (Kubernetes: "a null or empty node selector term
    matches no objects"), leaving the pod unschedulable: the affinity is left as it is."""
    everywhere = ProfileSpec(name="all", namespace="eq", quota_name="all-root")
    assert affinity_with_profile({"spec": {}}, everywhere) is None
    own = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "arch", "operator": "Exists"}]}]}
    pod = {
        "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": own}}
        }
    }
    assert affinity_with_profile(pod, everywhere) is None
