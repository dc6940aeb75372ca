"""The benchmark's options and constants."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, fields

PHASES = ("start", "restart", "burst", "loop", "pass", "failover")
RECONCILE_HISTOGRAM = "elastic_quota_reconcile_seconds"
DEFAULT_LEASE_DURATION = 15.0  # the operator's default (Settings.lease_duration)
LEASE_NAMESPACE = "koordinator-system"  # the operator's defaults: the reserved namespace
LEASE_NAME = "elastic-quota-operator"
FAST_POLL = 0.05
PROBE_TIMEOUT = 5.0
WRITES_DRAIN = 2.0
STOP_TIMEOUT = 30.0
MISMATCHES_SHOWN = 20
#: The event loop's budget (issue 10's target): the operators report every stall above it.
LOOP_BUDGET = 0.1
#: With ``--admission``: the name of the webhook configurations the operators register.
ADMISSION_CONFIGURATION = "scale.elasticquota.dev"


class BenchmarkError(RuntimeError):
    """The run cannot give its figures: the message says why (mismatches, a dead operator ...)."""


@dataclass(slots=True)
class Options:
    pods: int
    quotas: int
    nodes: int
    sizes: list[int]
    burst_pods: int
    concurrency: int
    phases: frozenset[str]
    pass_rounds: int
    changed_pods: int
    webhook_rate: float
    timeout: float
    lease_duration: float | None
    trace_memory: bool = False
    operator_nice: int = 0
    admission: bool = False

    @property
    def webhooks(self) -> bool:
        """Whether the active replica serves the webhooks (the prober calls them, or the API
        server does)."""
        return "loop" in self.phases or self.admission


def parse_options(argv: Sequence[str] | None = None, description: str | None = None) -> Options:
    """The options of ``argv`` (the command line's by default); ``description`` heads ``--help``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--pods", type=int, default=100_000, help="pods before the burst")
    parser.add_argument("--quotas", type=int, default=10_000, help="quotas (tree of depth 4)")
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument(
        "--sizes",
        default="",
        help="comma-separated pod counts: the start measurement at each (the last one replaces "
        "--pods)",
    )
    parser.add_argument("--burst-pods", type=int, default=50_000)
    parser.add_argument(
        "--concurrency", type=int, default=150, help="API requests in flight while creating"
    )
    parser.add_argument(
        "--phases", default=",".join(PHASES), help=f"which of {','.join(PHASES)} to run"
    )
    parser.add_argument("--pass-rounds", type=int, default=30)
    parser.add_argument("--changed-pods", type=int, default=10, help="pods changed per round")
    parser.add_argument(
        "--webhook-rate", type=float, default=20.0, help="webhook calls per second in the burst"
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="limit of every wait, in seconds"
    )
    parser.add_argument(
        "--lease-duration",
        type=float,
        default=None,
        help="ELASTIC_QUOTA_LEASE_DURATION of the operators (default: theirs, 15 s)",
    )
    parser.add_argument(
        "--trace-memory",
        action="store_true",
        help="run the operators under tracemalloc (benchmarks/memtrace.py) and print where the "
        "Python memory of each start went once it is correct (the figures of such a run are "
        "not the operator's own)",
    )
    parser.add_argument(
        "--operator-nice",
        type=int,
        default=0,
        help="niceness of the operators against the API server, etcd and this benchmark, which "
        "share the machine's cores with them (a node of its own in a cluster): -10 shows which "
        "stalls are the cores taken by the others (negative values need root)",
    )
    parser.add_argument(
        "--admission",
        action="store_true",
        help="the operators register their webhook configurations with the API server, as the "
        "chart does: every write of a quota (the operator's own included) and every pod created "
        "goes through them (default: served on loopback, not registered)",
    )
    args = parser.parse_args(argv)
    sizes = sorted(int(size) for size in args.sizes.split(",") if size.strip())
    phases = frozenset(phase.strip() for phase in args.phases.split(",") if phase.strip())
    if unknown := phases - set(PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    if args.quotas < 4 or args.nodes < 1 or args.pods < 0 or args.changed_pods < 1:
        parser.error("need --quotas >= 4, --nodes >= 1, --pods >= 0 and --changed-pods >= 1")
    # Every option of the command line is the field of the same name; three are read first.
    given = {field.name: getattr(args, field.name) for field in fields(Options)}
    read = {
        "pods": sizes[-1] if sizes else args.pods,
        "sizes": sizes or [args.pods],
        "phases": phases,
    }
    return Options(**(given | read))


LOOP_LAG_HISTOGRAM = "elastic_quota_event_loop_lag_seconds"
