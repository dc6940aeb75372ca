"""The `elastic-quota` command: `plan`, `run`, `tree`, `explain`, `usage`, `completion`.

The same program is the kubectl plugin `kubectl elastic-quota` (installed as the script
`kubectl-elastic_quota`): its name in usage, help and `--version` follows the name it was started
by (`program_name`).

`main` is the one place where a command's end becomes an exit code (`errors`): a `CliError` is
one line `error: MESSAGE` on stderr and its documented code; anything else is a bug, one line
naming it and code 70, the traceback only with `--debug`. A reader that goes away (`tree | head`)
ends the command quietly, as the Python documentation's note on SIGPIPE does it.

The demo on a local control plane is development tooling (`make run`, `devtools/eqdev/demo`),
not a command of the installed package.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from elasticquota import __version__
from elasticquota.cli.completion import add_completion_parser
from elasticquota.cli.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    CliError,
)
from elasticquota.cli.explain_command import add_explain_parser
from elasticquota.cli.plan_command import add_plan_parser
from elasticquota.cli.run_command import add_run_parser
from elasticquota.cli.tree_command import add_tree_parser
from elasticquota.cli.usage_command import add_usage_parser

PROG = "elastic-quota"
PLUGIN_PREFIX = "kubectl-"
DEBUG_HELP = "print the traceback of an unexpected error"


def program_name(argv0: str | None = None) -> str:
    """``kubectl elastic-quota`` when started as the plugin ``kubectl-elastic_quota`` (kubectl
    maps the underscore to a dash), else ``elastic-quota``."""
    base = os.path.basename(argv0 if argv0 is not None else sys.argv[0])
    if base.startswith(PLUGIN_PREFIX):
        return "kubectl " + base[len(PLUGIN_PREFIX) :].replace("_", "-")
    return PROG


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The whole command line."""
    top = argparse.ArgumentParser(
        prog=prog, description="Hierarchical elastic quota for Kubernetes."
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_plan_parser(commands)
    add_run_parser(commands)
    add_tree_parser(commands)
    add_explain_parser(commands)
    add_usage_parser(commands)
    add_completion_parser(commands, parser)
    for command in commands.choices.values():  # before or after the command's name
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP
        )
    return top


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name()
    args = parser(prog).parse_args(argv)
    try:
        code: int = args.handler(args)
        sys.stdout.flush()
    except CliError as error:
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return error.exit_code
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:
        if args.debug:
            traceback.print_exc()
        print(
            f"error: unexpected {type(error).__name__}: {_one_line(error)} (a bug: rerun with "
            "--debug for the traceback and report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return code


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _reader_gone() -> int:
    """The reader of stdout closed it: point stdout at /dev/null, so that the interpreter's
    final flush finds nothing to complain about (the Python docs' recipe for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
