"""Development tooling of elastic-quota-operator: what ``make`` and the tests use, never shipped.

The source root is ``devtools/`` (on the path of the make targets, pytest, mypy, ruff and
import-linter); the wheel and the image hold only ``operator/``'s ``elasticquota``. This package may
import ``elasticquota``; ``elasticquota`` never imports it (an import-linter contract).

- :mod:`eqdev.cluster`: the local control plane (kube-apiserver + etcd built from Debian's
  packages, a throwaway PKI, start/stop) and promtool's install: ``python -m eqdev.cluster``,
  ``make cluster``, ``make cluster-binaries``, the integration tests and the benchmarks;
- :mod:`eqdev.simulator`: the node simulation (a stand-in for the scheduler and the kubelets),
  plugged into the operator as an extra loop;
- :mod:`eqdev.demo`: the product live on the local control plane with the examples
  (``python -m eqdev.demo``, ``make run``).
"""
