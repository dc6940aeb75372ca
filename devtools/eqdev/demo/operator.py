"""``python -m eqdev.demo.operator [flags of elastic-quota run]``: the operator with the node
simulation plugged in, as the demo starts it.

The local control plane has no scheduler and no kubelets: :class:`~eqdev.simulator.NodeSimulator`
binds the pods that fit, marks them Running and removes stopped ones, as an extra loop of the
operator (``controller.runner.ExtraLoop``). Everything else is ``elastic-quota run``: the same
flags, the same settings, the same checks. Never against a real cluster.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from elasticquota.cli import parser
from elasticquota.cli.run_command import run_cli
from eqdev.simulator import simulation


def main(argv: Sequence[str] | None = None) -> int:
    flags = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(["run", *flags])
    return run_cli(args, extra_loops=(simulation,))


if __name__ == "__main__":
    sys.exit(main())
