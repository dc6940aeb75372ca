"""A topology rebuild in three steps (prepare on the loop, compute anywhere, finish on the loop).

Rules (core/solve/rebuild.py, QuotaEngine.prepare_rebuild/finish_rebuild): the job computes from
frozen pods and a fork of the pod index, so events after ``prepare_rebuild`` do not reach it;
installing it places again exactly the pods that changed meanwhile; quotas (or node resources) that
changed meanwhile leave the topology out of date for the next rebuild; a job overtaken by another
rebuild is dropped. Whatever the interleaving, the engine then solves like a fresh one.
"""

from __future__ import annotations

from typing import Any

from engine_factories import BIG, EngineFactory, loaded_engine, pod, quota
from engine_world import OBJECT_EVENT, World, observable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elasticquota.core.solve.engine import QuotaEngine
from elasticquota.core.solve.rebuild import RebuildJob, compute_rebuild


def rebuild_for_new_quota(make_engine: EngineFactory) -> tuple[QuotaEngine, RebuildJob]:
    """A solved engine given a new quota ``c``, and the rebuild job that change prepared."""
    engine = loaded_engine(make_engine, solved=True)
    engine.upsert_quota(quota("c", max={"cpu": BIG}))
    job = engine.prepare_rebuild()
    assert job is not None
    return engine, job


def test_the_three_steps_install_what_the_synchronous_rebuild_does(
    make_engine: EngineFactory,
) -> None:
    stepped, direct = (
        loaded_engine(make_engine, solved=True),
        loaded_engine(make_engine, solved=True),
    )
    for engine in (stepped, direct):
        engine.upsert_quota(quota("c", max={"cpu": BIG}))
        engine.upsert_pod(pod("z", "c", cpu=5))
    job = stepped.prepare_rebuild()
    assert job is not None
    assert stepped.finish_rebuild(job, compute_rebuild(job))
    assert stepped.prepare_rebuild() is None  # up to date: nothing to do
    assert observable(stepped.solve()) == observable(direct.solve())
    assert stepped.solve().quotas["c"].request == {"cpu": 5}


def test_pods_that_change_during_the_rebuild_count_once_as_they_are_now(
    make_engine: EngineFactory,
) -> None:
    engine, job = rebuild_for_new_quota(make_engine)
    engine.upsert_pod(pod("x", "a", cpu=40))  # changed while the job computes
    engine.delete_pod("team", "y")  # gone meanwhile
    engine.upsert_pod(pod("w", "c", cpu=7))  # new meanwhile
    assert engine.finish_rebuild(job, compute_rebuild(job))
    quotas = engine.solve().quotas
    assert quotas["a"].request == {"cpu": 40}
    assert quotas["b"].used == {"cpu": 0}
    assert quotas["c"].request == {"cpu": 7}


def test_a_quota_change_during_the_rebuild_leaves_the_topology_out_of_date(
    make_engine: EngineFactory,
) -> None:
    engine, job = rebuild_for_new_quota(make_engine)
    engine.upsert_quota(quota("d", max={"cpu": BIG}))
    assert engine.finish_rebuild(job, compute_rebuild(job))  # installed: as of the copy
    assert engine.tree_of_pod("team/x") is None  # placed anew by the next rebuild
    following = engine.prepare_rebuild()
    assert following is not None
    assert engine.finish_rebuild(following, compute_rebuild(following))
    assert {"c", "d"} <= set(engine.solve().quotas)


def test_a_job_overtaken_by_another_rebuild_is_dropped(make_engine: EngineFactory) -> None:
    engine, job = rebuild_for_new_quota(make_engine)
    engine.upsert_quota(quota("d", max={"cpu": BIG}))
    engine.solve()  # a synchronous reader rebuilt meanwhile
    epoch = engine.topology_epoch
    assert not engine.finish_rebuild(job, compute_rebuild(job))
    assert engine.topology_epoch == epoch
    assert "d" in engine.solve().quotas


def test_the_earlier_of_two_prepared_jobs_is_dropped(make_engine: EngineFactory) -> None:
    engine = loaded_engine(make_engine, solved=True)
    engine.upsert_quota(quota("c", max={"cpu": BIG}))
    first = engine.prepare_rebuild()
    second = engine.prepare_rebuild()
    assert first is not None and second is not None
    assert not engine.finish_rebuild(first, compute_rebuild(first))
    assert engine.finish_rebuild(second, compute_rebuild(second))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.lists(OBJECT_EVENT, max_size=12),
    during=st.lists(OBJECT_EVENT, max_size=12),
    after=st.lists(OBJECT_EVENT, max_size=6),
)
def test_any_events_around_a_stepped_rebuild_solve_like_a_fresh_engine(
    before: list[tuple[str, Any]],
    during: list[tuple[str, Any]],
    after: list[tuple[str, Any]],
) -> None:
    engine, world = QuotaEngine(), World()
    for kind, item in before:
        world.apply(engine, kind, item)
    job = engine.prepare_rebuild()
    for kind, item in during:
        world.apply(engine, kind, item)
    if job is not None:
        engine.finish_rebuild(job, compute_rebuild(job))
    for kind, item in after:
        world.apply(engine, kind, item)
    snapshot = engine.solve()
    assert observable(snapshot) == observable(world.fresh(engine))
