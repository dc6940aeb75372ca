"""``elastic-quota run``: the operator, against the cluster of a kubeconfig or in-cluster.

A setting outside its range, from a flag or the environment, stops the command before anything
starts: one line on stderr naming the setting, the value, where it came from and what is allowed,
exit code 2. The flags take their values as text, as the environment does, so that both are
checked by the settings alone (argparse would answer a flag that is not a number with its usage);
what argparse still refuses itself (a choice) is one line too.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from pydantic import ValidationError
from pydantic_settings import SettingsError

from elasticquota.cli.cluster import ClusterTarget, check_kubeconfig
from elasticquota.cli.errors import EXIT_UNSUPPORTED_KOPF, KubeconfigError
from elasticquota.settings import (
    ListenError,
    Settings,
    invalid_settings_message,
    missing_files,
    unusable_settings_message,
)

if TYPE_CHECKING:
    from elasticquota.controller.runner import ExtraLoop

EXIT_BAD_SETTINGS = 2


def _off_switch(run: argparse.ArgumentParser, flag: str, dest: str, help: str) -> None:
    """A ``--no-...`` flag that turns a setting off (absent: the setting from the environment)."""
    run.add_argument(flag, dest=dest, action="store_false", default=None, help=help)


def add_run_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Flags override ``ELASTIC_QUOTA_*`` environment variables (see README, Configuration)."""
    run = commands.add_parser(
        "run",
        help="run the operator",
        description="Watch quotas, profiles, pods and nodes; compute and write every quota's "
        "request, used and runtime. Settings come from ELASTIC_QUOTA_* variables and these flags.",
    )
    run.add_argument(
        "--kubeconfig", help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)"
    )
    run.add_argument("--reserved-namespace", help="namespace of the reserved quotas")
    _off_switch(
        run,
        "--no-min-quota-scale",
        "scale_min_quota",
        "do not scale mins down when they do not fit",
    )
    run.add_argument("--reconcile-interval", help="seconds between writes per tree")
    run.add_argument("--revocation-delay", help="seconds of over-use before revoking")
    run.add_argument(
        "--revocation-min-runtime", help="seconds a pod must have run before it may be revoked"
    )
    run.add_argument(
        "--preemption-min-runtime",
        help="seconds a pod must have run before in-quota preemption may evict it",
    )
    _off_switch(run, "--no-revocation", "revocation", "never evict pods of over-used quotas")
    run.add_argument(
        "--dry-run", action="store_true", default=None, help="compute and log, write nothing"
    )
    run.add_argument(
        "--metrics-port", help="port of /metrics, /healthz, /readyz, /statusz (0: off)"
    )
    run.add_argument(
        "--metrics-address", help="listen address of that port (default 0.0.0.0: all interfaces)"
    )
    run.add_argument("--log-level", help="DEBUG, INFO, WARNING, ...")
    run.add_argument(
        "--ignore-namespace",
        dest="ignore_namespaces",
        action="append",
        help="do not account pods of this namespace (repeatable)",
    )
    run.add_argument("--lease-name", help="name of the leader Lease")
    run.add_argument(
        "--lease-duration", type=float, help="seconds without renewal before a standby takes over"
    )
    run.add_argument(
        "--lease-renew-deadline",
        type=float,
        help="seconds the leader may fail to renew before it stops writing (below the duration)",
    )
    run.add_argument(
        "--lease-retry-period", type=float, help="seconds between a standby's looks at the Lease"
    )
    run.add_argument("--identity", help="this replica's identity in the Lease")
    add_webhook_arguments(run)
    run.set_defaults(handler=run_cli, flags=flags_of(run))
    # a flag argparse refuses itself (a choice): one line too, not the usage and the error
    setattr(run, "error", functools.partial(one_line_error, run))  # noqa: B010


def one_line_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """argparse's error, on one line: ``error: elastic-quota run: argument --x: invalid ...``."""
    parser.exit(EXIT_BAD_SETTINGS, f"error: {parser.prog}: {message}\n")


#: The settings of the admission webhooks that have a flag (``--webhook-port`` ...).
WEBHOOK_SETTINGS = (
    "webhook_port",
    "webhook_address",
    "webhook_host",
    "webhook_cert_file",
    "webhook_key_file",
    "webhook_ca_file",
    "webhook_failure_policy",
    "pod_webhook_failure_policy",
    "webhook_configuration",
)


def add_webhook_arguments(run: argparse.ArgumentParser) -> None:
    """Flags of the admission webhooks (README, Admission webhooks)."""
    webhooks = run.add_argument_group("admission webhooks (served when --webhook-port is set)")
    webhooks.add_argument("--webhook-port", help="HTTPS port of the webhooks (0: off)")
    webhooks.add_argument("--webhook-address", help="listen address (default 0.0.0.0)")
    webhooks.add_argument(
        "--webhook-host", help="host name or IP the API server reaches the webhooks at"
    )
    webhooks.add_argument(
        "--webhook-cert", dest="webhook_cert_file", help="PEM certificate (default: self-signed)"
    )
    webhooks.add_argument("--webhook-key", dest="webhook_key_file", help="PEM private key")
    webhooks.add_argument(
        "--webhook-ca", dest="webhook_ca_file", help="PEM CA bundle for the API server"
    )
    webhooks.add_argument(
        "--webhook-failure-policy",
        choices=("Fail", "Ignore"),
        help="quota writes when the webhooks are unreachable: refuse (Fail, default) or admit "
        "(Ignore)",
    )
    webhooks.add_argument(
        "--pod-webhook-failure-policy",
        choices=("Fail", "Ignore"),
        help="pod creates and updates when the webhooks are unreachable: admit (Ignore, "
        "default) or refuse (Fail)",
    )
    webhooks.add_argument(
        "--webhook-configuration",
        help="name of the webhook configurations the operator manages ('': not managed)",
    )


def flags_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each setting with a flag, and its flag (``reconcile_interval: --reconcile-interval``)."""
    return {
        action.dest: action.option_strings[-1]
        for action in parser._actions
        if action.option_strings and action.dest != "help"
    }


def run_cli(args: argparse.Namespace, extra_loops: Sequence[ExtraLoop] = ()) -> int:
    """The settings from ``args`` and the environment, then the operator (with ``extra_loops``:
    what development tooling plugs in, e.g. the demo's node simulation)."""
    overrides = {
        key: getattr(args, key)
        for key in (
            "kubeconfig",
            "reserved_namespace",
            "scale_min_quota",
            "reconcile_interval",
            "revocation_delay",
            "revocation_min_runtime",
            "preemption_min_runtime",
            "revocation",
            "dry_run",
            "metrics_port",
            "metrics_address",
            "log_level",
            "ignore_namespaces",
            "lease_name",
            "lease_duration",
            "lease_renew_deadline",
            "lease_retry_period",
            "identity",
            *WEBHOOK_SETTINGS,
        )
    }
    given = {name: flag for name, flag in args.flags.items() if overrides.get(name) is not None}
    try:
        settings = Settings.from_sources(overrides)
    except (ValidationError, SettingsError) as error:
        print(f"error: {invalid_settings_message(error, given)}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    missing = missing_files(settings, given)
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return EXIT_BAD_SETTINGS
    check_kubeconfig(ClusterTarget(settings.kubeconfig, None, None))  # as the read commands do
    # Kopf is imported only here.
    from kubernetes_asyncio.config import ConfigException

    from elasticquota.controller.runner import run_operator
    from elasticquota.controller.webhooks.kopfhooks import UnsupportedKopfError, kopf_problem

    problem = kopf_problem(settings.webhook_enabled, bool(settings.webhook_configuration))
    if problem is not None:  # before anything starts: one line naming the member
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_UNSUPPORTED_KOPF
    try:
        asyncio.run(run_operator(settings, extra_loops))
    except ListenError as error:  # the probes' or webhooks' port taken, or an address not ours
        print(
            f"error: {unusable_settings_message(error.settings, settings, str(error), given)}",
            file=sys.stderr,
        )
        return EXIT_BAD_SETTINGS
    except UnsupportedKopfError as error:  # a member looked up later than the start-up check
        print(f"error: {error}", file=sys.stderr)
        return EXIT_UNSUPPORTED_KOPF
    except ConfigException as error:  # e.g. in a pod without its token, a failing exec plugin
        raise KubeconfigError(f"cannot load the credentials: {error}") from error
    return 0
