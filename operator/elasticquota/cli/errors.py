"""The errors a command ends with, each one line on stderr and a documented exit code.

``main`` (``elasticquota.cli``) is the one place that turns them into ``error: MESSAGE`` and the
code; anything else that escapes a command is a bug: one line naming the exception and
``EXIT_INTERNAL``, the traceback only with ``--debug``. The table of codes is in docs/cli.md and
the README's CLI section (``tests/unit/cli/test_errors.py`` holds them to this module).

Kept free of the Kubernetes client, so that importing the command line stays cheap.
"""

from __future__ import annotations

#: Success.
EXIT_OK = 0
#: What was asked for does not exist: an unknown pod, quota, user or group.
EXIT_NOT_FOUND = 1
#: ``plan --fail-on-problems``: the manifests have an error or a warning (``plan`` has nothing
#: to find, so it shares the code, as linters exit 1 on findings).
EXIT_PROBLEMS = 1
#: The command line is wrong (argparse's usage errors) or an input file (``-f``) is unreadable.
EXIT_USAGE = 2
#: The kubeconfig is missing or invalid, or names no such context.
EXIT_KUBECONFIG = 3
#: The API server cannot be reached, or did not answer in time.
EXIT_UNREACHABLE = 4
#: The API server refused the credentials (401) or the access (403).
EXIT_FORBIDDEN = 5
#: The API server answered another error status.
EXIT_API = 6
#: ``run``: the installed Kopf lacks a member the webhooks use (a release the operator was not
#: tested with); the message names it and the releases tested.
EXIT_UNSUPPORTED_KOPF = 7
#: An unexpected error: a bug (rerun with ``--debug`` for the traceback).
EXIT_INTERNAL = 70
#: ``tree | head``: the reader of the output went away (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141
#: Interrupted (Ctrl-C): 128 + SIGINT.
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """An error a command ends with; the message is one line, ``exit_code`` documented."""

    exit_code = EXIT_INTERNAL


class NotFoundError(CliError):
    """An unknown pod, quota, user or group."""

    exit_code = EXIT_NOT_FOUND


class InputError(CliError):
    """An input file that cannot be read or parsed."""

    exit_code = EXIT_USAGE


class ClusterReadError(CliError):
    """The cluster could not be read (the subclasses say why)."""

    exit_code = EXIT_API


class KubeconfigError(ClusterReadError):
    """No kubeconfig, an invalid one, or an unknown context."""

    exit_code = EXIT_KUBECONFIG


class UnreachableError(ClusterReadError):
    """The API server refused the connection, does not resolve, or did not answer in time."""

    exit_code = EXIT_UNREACHABLE


class ForbiddenError(ClusterReadError):
    """401 or 403."""

    exit_code = EXIT_FORBIDDEN
