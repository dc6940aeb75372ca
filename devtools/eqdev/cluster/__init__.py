"""A local Kubernetes control plane for integration tests, ``make cluster`` and benchmarks.

Real kube-apiserver 1.20 + etcd 3.4 (+ kube-controller-manager), built offline from Debian's
packages (no registry reachable here ships control-plane binaries) and cached under
``~/.cache/elastic-quota/k8s-<version>/``; started on loopback with random ports and a throwaway
PKI. Development tooling: not in the installed package or the image, and nothing in
``elasticquota`` imports it.

- :func:`ensure_binaries` (:mod:`.build`): the cached binaries, built first if needed;
- :class:`LocalCluster` (:mod:`.cluster`): start/stop, kubeconfig, server URL, token, CA file;
- :func:`apply_crds` / :func:`apply_crds_sync`: install the project's CRDs through the API.

``python -m eqdev.cluster build|up`` is the command-line entry point; its ``promtool``
command installs Prometheus' rule checker from Debian's ``prometheus`` package (:mod:`.promtool`).
"""

from eqdev.cluster.binaries import Binaries, BuildError
from eqdev.cluster.build import ensure_binaries
from eqdev.cluster.cluster import ClusterError, LocalCluster
from eqdev.cluster.crds import apply_crds, apply_crds_sync, default_crd_dir

__all__ = [
    "Binaries",
    "BuildError",
    "ClusterError",
    "LocalCluster",
    "apply_crds",
    "apply_crds_sync",
    "default_crd_dir",
    "ensure_binaries",
]
