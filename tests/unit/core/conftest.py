"""Fixtures for the engine tests: every engine test runs once per solver.

``solver`` is the numba kernel (``waterfill.solve_tree``) or its plain-Python twin
(``reference.solve_tree``); both must give the same engine-level results.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from engine_factories import EngineFactory, SolveFunction

from elasticquota.core.model.models import NodeInfo, PodInfo
from elasticquota.core.model.quota import Quota
from elasticquota.core.solve.engine import EngineSettings, QuotaEngine, Solver
from elasticquota.core.solve.results import Snapshot
from elasticquota.kernels import reference, waterfill

SOLVERS: dict[str, Solver] = {
    "numba": waterfill.solve_tree,
    "reference": reference.solve_tree,
}


@pytest.fixture(params=sorted(SOLVERS))
def solver(request: pytest.FixtureRequest) -> Solver:
    """The tree solver under test: the numba kernel or the reference twin."""
    return SOLVERS[request.param]


@pytest.fixture
def make_engine(solver: Solver) -> EngineFactory:
    """``make_engine(**settings)``: an empty engine on the solver under test."""

    def make(**settings: Any) -> QuotaEngine:
        return QuotaEngine(EngineSettings(**settings), solver=solver)

    return make


@pytest.fixture
def solve(make_engine: EngineFactory) -> SolveFunction:
    """``solve(quotas, pods, nodes, **settings)``: load a fresh engine and solve it once."""

    def run(
        quotas: Iterable[Quota] = (),
        pods: Iterable[PodInfo] = (),
        nodes: Iterable[NodeInfo] = (),
        **settings: Any,
    ) -> Snapshot:
        return make_engine(**settings).load(quotas=quotas, pods=pods, nodes=nodes).solve()

    return run
