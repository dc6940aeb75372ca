"""Engine-level properties over random trees of quotas, pods and nodes (hypothesis)."""

from __future__ import annotations

import pytest
from engine_strategies import Cluster, clusters
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.core.keys import ROOT_QUOTA
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine, Solver
from elasticquota.core.solve.results import Snapshot
from elasticquota.kernels import reference, waterfill

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def solve(cluster: Cluster, scale: bool, solver: Solver = waterfill.solve_tree) -> Snapshot:
    engine = QuotaEngine(EngineSettings(scale_min_quota=scale), solver=solver)
    return engine.load(cluster.quotas, cluster.pods, cluster.nodes).solve()


def user_quotas(snapshot: Snapshot) -> list[str]:
    return sorted(name for name, result in snapshot.quotas.items() if not result.reserved)


# -- numba kernel == reference twin -------------------------------------------------------------


def check_kernel_matches_reference(cluster: Cluster, scale: bool) -> None:
    kernel = solve(cluster, scale, waterfill.solve_tree)
    twin = solve(cluster, scale, reference.solve_tree)
    assert dict(kernel.quotas) == dict(twin.quotas)
    assert dict(kernel.totals) == dict(twin.totals)


@FAST
@given(cluster=clusters(), scale=st.booleans())
def test_numba_kernel_matches_reference_twin(cluster: Cluster, scale: bool) -> None:
    check_kernel_matches_reference(cluster, scale)


@pytest.mark.slow
@LONG
@given(cluster=clusters(max_quotas=12, large=True), scale=st.booleans())
def test_numba_kernel_matches_reference_twin_with_huge_values(
    cluster: Cluster, scale: bool
) -> None:
    """Values up to 2^62 - 1: saturating sums and 128-bit shares must agree exactly."""
    check_kernel_matches_reference(cluster, scale)


# -- water-filling guarantees -------------------------------------------------------------------


def check_lender_gets_its_request(snapshot: Snapshot, cluster: Cluster) -> int:
    """A lending quota asking no more than its (effective) min gets exactly its request.

    Returns how many (quota, resource) pairs the rule applied to.
    """
    checked = 0
    for spec in cluster.quotas:
        if not spec.allow_lent:
            continue
        result = snapshot.quotas[spec.name]
        for key, runtime in result.runtime.items():
            asked = result.limited_request.get(key, 0)
            if asked <= result.effective_min.get(key, 0):
                assert runtime == asked, (spec.name, key)
                checked += asked > 0
    return checked


def check_borrower_capped(snapshot: Snapshot) -> None:
    """Nobody, borrower or not, gets more than its limited request."""
    for name in user_quotas(snapshot):
        result = snapshot.quotas[name]
        for key, runtime in result.runtime.items():
            assert runtime <= result.limited_request.get(key, 0), (name, key)


def check_children_fit_in_parent(snapshot: Snapshot, scale: bool) -> None:
    """When the children's mins fit in what their parent has (or are scaled to fit), the
    children's runtimes never sum above the parent's runtime."""
    root = snapshot.quotas[ROOT_QUOTA]
    parents = {ROOT_QUOTA: root.runtime} | {
        name: snapshot.quotas[name].runtime for name in user_quotas(snapshot)
    }
    for parent, available in parents.items():
        children = [
            snapshot.quotas[name]
            for name in user_quotas(snapshot)
            if snapshot.quotas[name].parent == parent
        ]
        if not children:
            continue
        for key in {key for child in children for key in child.runtime}:
            total = available.get(key, 0)
            mins = sum(child.min.get(key, 0) for child in children)
            # Only a resource the parent has (present in its runtime) is scaled.
            scaled = scale and key in available
            if mins > total and not scaled:
                continue
            assert sum(child.runtime.get(key, 0) for child in children) <= total, (parent, key)


@FAST
@given(cluster=clusters(), scale=st.booleans())
def test_lending_quota_at_or_under_its_min_gets_its_request(cluster: Cluster, scale: bool) -> None:
    check_lender_gets_its_request(solve(cluster, scale), cluster)


@FAST
@given(cluster=clusters(), scale=st.booleans())
def test_nobody_exceeds_its_limited_request(cluster: Cluster, scale: bool) -> None:
    check_borrower_capped(solve(cluster, scale))


@FAST
@given(cluster=clusters(), scale=st.booleans())
def test_children_never_sum_above_their_parent_when_mins_fit(cluster: Cluster, scale: bool) -> None:
    check_children_fit_in_parent(solve(cluster, scale), scale)


@pytest.mark.slow
@LONG
@given(cluster=clusters(max_quotas=12), scale=st.booleans())
def test_water_filling_guarantees_on_larger_trees(cluster: Cluster, scale: bool) -> None:
    snapshot = solve(cluster, scale, reference.solve_tree)
    check_lender_gets_its_request(snapshot, cluster)
    check_borrower_capped(snapshot)
    check_children_fit_in_parent(snapshot, scale)
    check_demand_above_supply_takes_everything(snapshot, scale)


def check_demand_above_supply_takes_everything(snapshot: Snapshot, scale: bool) -> int:
    """With mins that fit (or are scaled to fit): when the children ask more than their parent
    has and every borrower has a positive weight, the parent's whole runtime is handed out.

    Returns how many (parent, resource) pairs the rule applied to.
    """
    checked = 0
    parents = [ROOT_QUOTA, *user_quotas(snapshot)]
    for parent in parents:
        children = [
            snapshot.quotas[name]
            for name in user_quotas(snapshot)
            if snapshot.quotas[name].parent == parent
        ]
        for key, available in snapshot.quotas[parent].runtime.items():
            members = [child for child in children if key in child.runtime]
            if not members:
                continue
            asked = sum(child.limited_request.get(key, 0) for child in members)
            mins = sum(child.min.get(key, 0) for child in members)
            borrowers = [
                child
                for child in members
                if child.limited_request.get(key, 0) > child.effective_min.get(key, 0)
            ]
            if asked <= available or (mins > available and not scale):
                continue
            if any(child.shared_weight.get(key, 0) <= 0 for child in borrowers):
                continue
            assert sum(child.runtime[key] for child in members) == available, (parent, key)
            checked += 1
    return checked


@FAST
@given(cluster=clusters(), scale=st.booleans())
def test_demand_above_supply_takes_the_whole_runtime(cluster: Cluster, scale: bool) -> None:
    check_demand_above_supply_takes_everything(solve(cluster, scale), scale)
