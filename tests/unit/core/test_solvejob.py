"""A solve in three steps (prepare on the loop, compute anywhere, finish on the loop).

Rules (core/solve/solvejob.py, QuotaEngine.prepare_solve/finish_solve): the job computes from a copy
of the inputs, so events after ``prepare_solve`` do not reach it and leave the tree dirty; a job
whose tree was rebuilt or solved by someone else meanwhile is dropped; the three steps publish
exactly what the synchronous solve publishes.
"""

from __future__ import annotations

from engine_factories import BIG, EngineFactory, loaded_engine, pod, quota

from elasticquota.core.solve.solvejob import compute


def test_the_three_steps_publish_what_the_synchronous_solve_does(
    make_engine: EngineFactory,
) -> None:
    stepped, direct = loaded_engine(make_engine), loaded_engine(make_engine)
    job = stepped.prepare_solve("")
    assert job is not None
    assert stepped.finish_solve(job, compute(job, stepped.solver))
    assert dict(stepped.published("")) == dict(direct.solve_tree(""))
    assert stepped.dirty_trees() == []
    assert stepped.prepare_solve("") is None  # up to date: nothing to do


def test_events_after_the_copy_leave_the_tree_dirty_for_the_next_solve(
    make_engine: EngineFactory,
) -> None:
    engine = loaded_engine(make_engine)
    job = engine.prepare_solve("")
    assert job is not None
    engine.upsert_pod(pod("z", "a", cpu=5))  # arrives while the job computes
    assert engine.finish_solve(job, compute(job, engine.solver))
    assert engine.published("")["a"].request == {"cpu": 30}  # as of the copy
    assert engine.dirty_trees() == [""]
    assert engine.solve_tree("")["a"].request == {"cpu": 35}


def test_a_job_overtaken_by_another_solve_is_dropped(make_engine: EngineFactory) -> None:
    engine = loaded_engine(make_engine)
    job = engine.prepare_solve("")
    assert job is not None
    engine.upsert_pod(pod("z", "a", cpu=5))
    newer = engine.solve_tree("")  # e.g. a synchronous reader solved meanwhile
    assert not engine.finish_solve(job, compute(job, engine.solver))
    assert engine.published("") is newer  # the older job's results did not replace them


def test_a_job_of_a_rebuilt_topology_is_dropped(make_engine: EngineFactory) -> None:
    engine = loaded_engine(make_engine)
    job = engine.prepare_solve("")
    assert job is not None
    engine.upsert_quota(quota("c", max={"cpu": BIG}))  # the trees are rebuilt
    assert not engine.finish_solve(job, compute(job, engine.solver))
    assert "c" in engine.solve_tree("")
