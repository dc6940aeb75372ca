"""The timings the docs give (retry waits, watch bounds, grace periods) are the code's constants.

README.md, docs/operator.md and docs/failure-modes.md tell an operator how long things take: how
often a failed read is retried, when a dropped connection is noticed, when a start-up step gives
up. Each such figure is written here from the constant or default it states, so that changing the
constant without the sentence (or the sentence without the constant) fails.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from repo_tools import ROOT

from elasticquota.controller.enforcement.revocation import SOLVE_EVERY
from elasticquota.controller.ingest import Ingest
from elasticquota.controller.reconcile.problems import SETTLE_SECONDS
from elasticquota.controller.solving import SWITCH_INTERVAL
from elasticquota.controller.state import READY_GRACE
from elasticquota.core.generic.timeslice import SLICE_BUDGET
from elasticquota.kube.backoff import FIRST_DELAY, MAX_DELAY
from elasticquota.kube.errors import START_UP_ATTEMPTS, with_retries
from elasticquota.kube.lease import LeaderElector
from elasticquota.kube.reflector import STALL_SLACK
from elasticquota.settings import Settings


def default(function: Callable[..., Any], parameter: str) -> Any:
    return inspect.signature(function).parameters[parameter].default


def start_up_seconds() -> float:
    """The waits of ``with_retries`` between ``START_UP_ATTEMPTS`` attempts."""
    delay, total = default(with_retries, "first_delay"), 0.0
    for _ in range(START_UP_ATTEMPTS - 1):
        total += delay
        delay = min(delay * 2, default(with_retries, "max_delay"))
    return total


SETTINGS = Settings(identity="docs")
SERVER = default(Ingest.__init__, "server_timeout")
MARGIN = default(Ingest.__init__, "client_margin")
#: The reflector asks the server for ``server_timeout`` plus up to a fifth of it.
SERVER_AT_MOST = SERVER * 1.2
ELECTOR = LeaderElector(
    object(),  # never called: only the timings are read
    "ns",
    "lease",
    "me",
    duration=SETTINGS.lease_duration,
    retry_period=SETTINGS.lease_retry_period,
    renew_deadline=SETTINGS.effective_lease_renew_deadline,
)
UP_TO = f"from {FIRST_DELAY:g} s to {MAX_DELAY:g} s"

FIGURES = [
    # The readers' retries (kube.backoff).
    ("docs/operator.md", f"failures retried after waits that double {UP_TO}"),
    ("docs/operator.md", f"the retries in between (after waits that double {UP_TO}"),
    ("docs/failure-modes.md", f"Retries wait {FIRST_DELAY:g} s, doubling up to {MAX_DELAY:g} s"),
    ("docs/failure-modes.md", f"({FIRST_DELAY:g} s doubling to {MAX_DELAY:g} s, jittered)"),
    # The watches' bounds (controller.ingest, kube.reflector).
    ("README.md", f"blinds it for {SERVER_AT_MOST + MARGIN:g} s at most"),
    ("docs/operator.md", f"after {SERVER:g}-{SERVER_AT_MOST:g} s (`timeoutSeconds` with jitter"),
    ("docs/operator.md", f"is given up {MARGIN:g} s after that"),
    ("docs/operator.md", f"A watch still open {STALL_SLACK:g} s after the server"),
    ("docs/failure-modes.md", f"end it after {SERVER:g} s plus jitter, the client gives up"),
    ("docs/failure-modes.md", f"the client gives up {MARGIN:g} s later"),
    ("docs/failure-modes.md", f"A frozen watch is known dead {STALL_SLACK:g} s after"),
    ("docs/operator.md", f"known dead for more than {READY_GRACE:g} s"),
    # Start-up steps (kube.errors.with_retries, START_UP_ATTEMPTS).
    (
        "docs/failure-modes.md",
        f"{START_UP_ATTEMPTS} attempts (about {round(start_up_seconds())} s)",
    ),
    (
        "docs/operator.md",
        f"for about {round(start_up_seconds())} s ({START_UP_ATTEMPTS} attempts)",
    ),
    # The Lease (kube.lease with the settings' defaults).
    ("docs/operator.md", f"the holder renews every {ELECTOR.renew_interval:g} s"),
    (
        "docs/failure-modes.md",
        f"renew deadline ({ELECTOR.renew_deadline:g} s of a {ELECTOR.duration:g}-s Lease)",
    ),
    (
        "docs/failure-modes.md",
        f"It has stopped {ELECTOR.duration - ELECTOR.renew_deadline:g} s before a standby",
    ),
    # The event loop's budget and the loops' paces.
    ("docs/operator.md", f"every {SWITCH_INTERVAL * 1000:g} ms instead of CPython's 5 ms"),
    ("docs/operator.md", f"in slices that yield after {SLICE_BUDGET * 1000:g} ms at most"),
    ("docs/operator.md", f"the revocation check solves at most every {SOLVE_EVERY:g} s"),
    ("docs/operator.md", f"stood for `profile-debounce` + {SETTLE_SECONDS:g} s"),
    ("docs/operator.md", f"`API_TIMEOUT` ({SETTINGS.api_timeout:g} s)"),
    ("docs/failure-modes.md", f"`API_TIMEOUT` ({SETTINGS.api_timeout:g} s)"),
]


def flat(path: str) -> str:
    """The page with its lines joined: a sentence may wrap anywhere."""
    return " ".join((ROOT / path).read_text().split())


@pytest.mark.parametrize(("page", "figure"), FIGURES, ids=[figure for _, figure in FIGURES])
def test_the_page_gives_the_codes_figure(page: str, figure: str) -> None:
    assert figure in flat(page), f"{page} does not say: {figure}"


def test_the_figures_are_the_expected_ones() -> None:
    """The constants read as the docs have long said: a change of one is meant."""
    assert (FIRST_DELAY, MAX_DELAY, SERVER, MARGIN, STALL_SLACK) == (1.0, 10.0, 25.0, 5.0, 2.0)
    assert (START_UP_ATTEMPTS, round(start_up_seconds())) == (8, 16)
    assert (ELECTOR.renew_interval, ELECTOR.renew_deadline) == (5.0, 10.0)
