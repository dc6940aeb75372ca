"""Equal figure lists of one solve are one object (core/solve/treeresults.py).

A 10,000-quota tree's solve builds some 70,000 lists of which a few hundred differ; sharing them
keeps the results small. Sharing must never mix up lists that differ, whether in their values or
in the keys they keep.
"""

from __future__ import annotations

import tracemalloc

from engine_factories import BIG, EngineFactory, node, pod, quota

from elasticquota.core.solve.treeresults import tree_results


def test_equal_lists_of_one_solve_are_one_object(make_engine: EngineFactory) -> None:
    engine = make_engine().load(
        [quota(name, min={"cpu": 10}, max={"cpu": BIG, "memory": BIG}) for name in "abc"],
        [pod("p", "c", node="n", cpu=5)],
        [node("n", cpu=100, memory=100)],
    )
    results = engine.solve_tree("")
    a, b, c = results["a"], results["b"], results["c"]
    assert a.used == b.used == {"cpu": 0, "memory": 0}
    assert a.used is b.used is a.request  # three equal lists, one dict
    assert c.used == {"cpu": 5, "memory": 0}  # a different row keeps its own
    assert a.runtime is b.runtime


def test_lists_that_keep_different_keys_stay_apart(make_engine: EngineFactory) -> None:
    engine = make_engine().load(
        [
            quota("a", min={"cpu": 10}, max={"cpu": BIG}),
            quota("b", min={"cpu": 10}, max={"cpu": BIG, "memory": BIG}),
            quota("c", min={"cpu": 10, "memory": 5}, max={"cpu": BIG, "memory": BIG}),
        ],
        [],
        [node("n", cpu=100, memory=100)],
    )
    results = engine.solve_tree("")
    assert results["a"].used == {"cpu": 0}
    assert results["b"].used == {"cpu": 0, "memory": 0}
    assert results["b"].effective_min == {"cpu": 10}
    assert results["c"].effective_min == {"cpu": 10, "memory": 5}


def test_the_rows_are_taken_in_a_slice_at_a_time(make_engine: EngineFactory) -> None:
    """The kernel's output rows become Python lists a slice of rows at a time: a whole tree at
    once made 110,000 lists alive together at 10,000 quotas (a transient 10 MB, and as many
    objects for the collector to scan while the results were built). Measured as the peak of
    traced memory per row of a 3,000-quota tree: 962 bytes at once, 430 by slices."""
    count = 3000
    engine = make_engine().load(
        [
            quota(f"q{index}", min={"cpu": 10, "memory": 10}, max={"cpu": BIG, "memory": BIG})
            for index in range(count)
        ],
        [pod(f"p{index}", f"q{index}", node="n", cpu=1, memory=1) for index in range(count)],
        [node("n", cpu=10**6, memory=10**6)],
    )
    job = engine.prepare_solve("")
    assert job is not None
    output = engine.solver(job.arrays, job.scale_min_quota)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        results = tree_results(job.layout, job.topology, output)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(results) == count + 1
    assert (peak - before) / count < 500
