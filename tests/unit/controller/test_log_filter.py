"""Nothing that heals itself is logged at ERROR: Kopf's per-retry lines are demoted to DEBUG.

Rules (controller/runner.py ``RetriesAreNotErrors``): Kopf's "Request attempt … failed; will retry"
and "…; will re-authenticate" ERRORs become DEBUG records, dropped unless the root logger shows
DEBUG; Kopf's final failure ("escalating") and every other logger's ERRORs pass unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from elasticquota.controller.runner import RetriesAreNotErrors


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def collected() -> Iterator[Collect]:
    handler = Collect()
    handler.addFilter(RetriesAreNotErrors())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


RETRY = "Request attempt #1/9 failed; will retry: GET https://api/x -> TimeoutError()"
REAUTH = "Request attempt #2/9 failed; SSL closed; will re-authenticate: GET https://api/x"
ESCALATE = "Request attempt #9/9 failed; escalating: GET https://api/x -> TimeoutError()"


def test_kopf_retries_are_not_errors(collected: Collect) -> None:
    kopf = logging.getLogger("kopf._cogs.clients.api")
    kopf.error(RETRY)
    kopf.error(REAUTH)
    kopf.error(ESCALATE)
    logging.getLogger("elasticquota.controller.reconcile.reconciler").error(RETRY)
    said = [(r.name, r.levelname, r.getMessage()) for r in collected.records]
    assert said == [
        ("kopf._cogs.clients.api", "ERROR", ESCALATE),
        ("elasticquota.controller.reconcile.reconciler", "ERROR", RETRY),
    ]


def test_at_debug_kopf_retries_show_as_debug(collected: Collect) -> None:
    logging.getLogger().setLevel(logging.DEBUG)
    logging.getLogger("kopf._cogs.clients.api").error(RETRY)
    [record] = collected.records
    assert (record.levelname, record.getMessage()) == ("DEBUG", RETRY)
