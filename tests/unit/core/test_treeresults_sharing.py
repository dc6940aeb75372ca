"""Equal figure lists of one solve are one object (core/solve/treeresults.py).

A 10,000-quota tree's solve builds some 70,000 lists of which a few hundred differ; sharing them
keeps the results small. Sharing must never mix up lists that differ, whether in their values or
in the keys they keep.
"""

from __future__ import annotations

from engine_factories import BIG, EngineFactory, node, pod, quota


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
