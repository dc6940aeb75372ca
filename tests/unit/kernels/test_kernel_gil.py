"""The kernels a worker thread calls release the GIL, so the event loop's thread runs meanwhile."""

from __future__ import annotations

import os

import pytest

from elasticquota.kernels import waterfill

ENTRY_KERNELS = ["_solve_tree_kernel", "_water_fill_kernel", "_split_kernel"]


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="plain Python: no kernels")
@pytest.mark.parametrize("name", ENTRY_KERNELS)
def test_the_kernels_called_from_python_release_the_gil(name: str) -> None:
    assert getattr(waterfill, name).targetoptions.get("nogil") is True
