"""``--revocation-min-runtime``: the operator's ``REVOCATION_MIN_RUNTIME``, told to ``plan`` and
``explain`` so that they choose a revocation round's victims as the operator does (a command that
reads manifests or the cluster cannot know the operator's settings); ``--preemption-min-runtime``:
its ``PREEMPTION_MIN_RUNTIME``, told to ``explain`` so that it says what in-quota preemption does.

Pods are judged as of the moment the command runs: a pod whose ``status.startTime`` is less than
that many seconds before it is spared, as the operator would spare it now.
"""

from __future__ import annotations

import argparse
import time

from elasticquota.core.decisions.minruntime import MinRuntime
from elasticquota.settings.values import WEEK


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= WEEK:
        raise argparse.ArgumentTypeError(f"{text} is outside 0-{WEEK:g} seconds (a week)")
    return value


#: The evictions with a minimum runtime, as their help names them.
EVICTIONS = {"revocation": "revocation", "preemption": "in-quota preemption"}


def add_min_runtime_option(command: argparse.ArgumentParser, eviction: str = "revocation") -> None:
    """``--revocation-min-runtime`` (or ``--preemption-min-runtime``)."""
    command.add_argument(
        f"--{eviction}-min-runtime",
        type=_seconds,
        default=0.0,
        metavar="SECONDS",
        help=f"{EVICTIONS[eviction]} spares pods that have run less than this (the operator's "
        f"{eviction.upper()}_MIN_RUNTIME; default 0: none)",
    )


def min_runtime_of(args: argparse.Namespace, eviction: str = "revocation") -> MinRuntime:
    """The protection ``--revocation-min-runtime`` (or ``--preemption-min-runtime``) asks for,
    as of now."""
    return MinRuntime(getattr(args, f"{eviction}_min_runtime"), time.time())
