"""The `elastic-quota` command: `plan`, `run`, `tree`, `explain`, `usage`.

The demo on a local control plane is development tooling (``make run``, ``devtools/eqdev/demo``),
not a command of the installed package.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from elasticquota import __version__
from elasticquota.cli.explain_command import add_explain_parser
from elasticquota.cli.plan_command import add_plan_parser
from elasticquota.cli.run_command import add_run_parser
from elasticquota.cli.tree_command import add_tree_parser
from elasticquota.cli.usage_command import add_usage_parser


def parser() -> argparse.ArgumentParser:
    """The whole command line."""
    top = argparse.ArgumentParser(
        prog="elastic-quota", description="Hierarchical elastic quota for Kubernetes."
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    add_plan_parser(commands)
    add_run_parser(commands)
    add_tree_parser(commands)
    add_explain_parser(commands)
    add_usage_parser(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
