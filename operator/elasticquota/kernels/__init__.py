"""Numba kernels over flat integer arrays, each with a plain-Python reference twin.

Kernels take and return numpy arrays only; they know nothing about quotas, names or Kubernetes.
"""

from elasticquota.kernels.arrays import MAXV, SolveResult, TreeArrays
from elasticquota.kernels.warmup import warm_up
from elasticquota.kernels.waterfill import solve_tree

__all__ = ["MAXV", "SolveResult", "TreeArrays", "solve_tree", "warm_up"]
