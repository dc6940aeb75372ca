"""Pay the kernels' compilation once, at start-up, instead of on the first real solve.

``solve_tree`` is compiled by numba on its first call (a few seconds) or loaded from the on-disk
cache (``cache=True``). ``warm_up()`` makes that first call on a tiny tree with exactly the array
types real trees use, so the operator is fast from its first event.
"""

from __future__ import annotations

import numpy as np

from elasticquota.kernels.arrays import MAXV, TreeArrays
from elasticquota.kernels.waterfill import solve_tree


def warm_up() -> None:
    """Compile (or load from the cache) ``solve_tree`` by solving a three-quota tree."""
    nodes, resources = 4, 2
    values = np.array([[0, 0], [4, 2**61], [3, 5], [1, 2**60]], dtype=np.int64)
    zeros = np.zeros((nodes, resources), dtype=np.int64)
    cap = np.full((nodes, resources), MAXV, dtype=np.int64)
    tree = TreeArrays(
        np.array([1, 3, 4, 4, 4], dtype=np.int64),
        values,
        values,
        zeros,
        zeros,
        values // 2,
        zeros,
        cap,
        values,
        np.ones((nodes, resources), dtype=np.bool_),
        np.array([5, 2**61], dtype=np.int64),
        np.ones(resources, dtype=np.bool_),
    )
    solve_tree(tree, True)
