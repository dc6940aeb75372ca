"""ControllerState and profiles: raw bodies in, profiles kept, the profile controller woken.

Rules (controller/state.py): a profile change wakes the profile controller (``profiles_changed``),
not the reconciler's dispatcher; a broken profile is dropped and reported through ``problems()``
until it is fixed or deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state_probes import refs

from elasticquota.controller.state import ControllerState
from elasticquota.core import keys

if TYPE_CHECKING:
    from conftest import Bodies


def test_a_profile_is_kept_with_its_labels(state: ControllerState, k8s: Bodies) -> None:
    body = k8s.profile(
        "gpu",
        quota_name="gpu-root",
        match_labels={"pool": "gpu"},
        labels={keys.LABEL_TREE_ID: "42"},
    )
    state.on_profile(body)

    profile = state.profiles[("team", "gpu")]
    assert (profile.quota_name, profile.node_selector.match_labels) == ("gpu-root", {"pool": "gpu"})
    assert state.profile_labels[("team", "gpu")] == {keys.LABEL_TREE_ID: "42"}
    assert state.profiles_changed.is_set()
    assert not state.trees_changed.is_set()


def test_a_deleted_profile_is_forgotten(state: ControllerState, k8s: Bodies) -> None:
    body = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    state.on_profile(body)
    state.profiles_changed.clear()

    state.on_profile_deleted(body)

    assert state.profiles == {} and state.profile_labels == {}
    assert state.profiles_changed.is_set()


def test_a_broken_profile_is_dropped_and_reported(state: ControllerState, k8s: Bodies) -> None:
    good = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    state.on_profile(good)
    broken = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    del broken["spec"]["quotaName"]

    state.on_profile(broken)

    assert ("team", "gpu") not in state.profiles
    assert "ElasticQuotaProfile team/gpu" in refs(state)


def test_a_deleted_broken_profile_is_no_longer_reported(
    state: ControllerState, k8s: Bodies
) -> None:
    broken = k8s.profile("gpu", quota_name="gpu-root", match_labels={"pool": "gpu"})
    del broken["spec"]["nodeSelector"]
    state.on_profile(broken)
    state.on_profile_deleted(broken)
    assert "ElasticQuotaProfile team/gpu" not in refs(state)
