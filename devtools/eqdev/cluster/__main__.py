"""``python -m eqdev.cluster build|up|promtool``: the local control plane and dev tools.

``build`` makes sure the binaries are cached (building them takes about three minutes once).
``up`` starts a :class:`~eqdev.cluster.cluster.LocalCluster`, installs the CRDs, prints
``export KUBECONFIG=...`` on stdout (progress goes to stderr) and keeps the cluster up until
Ctrl-C or SIGTERM, then stops it and removes its run directory. It exits non-zero if a component
dies on its own. ``promtool --dest DIR`` installs ``DIR/promtool`` from Debian's ``prometheus``
package (:mod:`.promtool`, ``make promtool``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from eqdev.cluster.binaries import BuildError, say
from eqdev.cluster.build import ensure_binaries
from eqdev.cluster.cluster import ClusterError, LocalCluster
from eqdev.cluster.crds import apply_crds_sync, default_crd_dir
from eqdev.cluster.pki import PkiError
from eqdev.cluster.promtool import install_promtool

WATCH_INTERVAL = 1.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m eqdev.cluster",
        description="A local kube-apiserver + etcd (+ kube-controller-manager) on loopback.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build and cache the binaries if they are not cached yet")
    up = commands.add_parser("up", help="start a cluster, apply the CRDs, wait for Ctrl-C")
    up.add_argument(
        "--crd-dir",
        type=Path,
        default=None,
        help="directory of CRD manifests to apply (default: the repository's crds/)",
    )
    up.add_argument(
        "--no-controller-manager",
        action="store_true",
        help="run kube-apiserver and etcd only",
    )
    promtool = commands.add_parser(
        "promtool", help="install promtool from Debian's prometheus package into --dest"
    )
    promtool.add_argument(
        "--dest", type=Path, required=True, help="directory to put the promtool binary in"
    )
    return parser


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _build() -> int:
    binaries = ensure_binaries()
    say(f"Kubernetes {binaries.kubernetes_version} binaries in {binaries.directory}")
    for package, version in sorted(binaries.packages.items()):
        say(f"  {package} {version}")
    return 0


def _up(crd_dir: Path, controller_manager: bool) -> int:
    # Both signals stop the cluster cleanly; SIGINT is re-armed because a shell starting us in
    # the background would have left it ignored.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with LocalCluster(controller_manager=controller_manager) as cluster:
        say(f"kube-apiserver ready at {cluster.server} in {cluster.startup_seconds:.1f} s")
        names = apply_crds_sync(cluster.kubeconfig, crd_dir)
        say(f"CRDs established: {', '.join(names)}")
        print(f"export KUBECONFIG={cluster.kubeconfig}", flush=True)
        say("running; press Ctrl-C to stop")
        try:
            while True:
                cluster.check()
                time.sleep(WATCH_INTERVAL)
        except KeyboardInterrupt:
            say("stopping")
    say("stopped; run directory removed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            return _build()
        if args.command == "promtool":
            install_promtool(args.dest)
            return 0
        crd_dir = args.crd_dir if args.crd_dir is not None else default_crd_dir()
        return _up(crd_dir, controller_manager=not args.no_controller_manager)
    except (BuildError, ClusterError, PkiError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
