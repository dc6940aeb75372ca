"""Transient API failures are logged once per outage; refusals each time.

Rules (kube/outages.py): the first transient failure (timeout, lost connection, 409, 429,
5xx) of a loop is one WARNING naming the subject and the cause; the next ones are DEBUG; the first
success after them is one INFO with the outage's duration; a refusal (e.g. 403, 422) is a WARNING
each time and does not start or end an outage.
"""

from __future__ import annotations

import logging

import aiohttp
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.kube.outages import OutageLog

logger = logging.getLogger("test.outages")


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == logger.name]


def test_an_outage_is_one_warning_and_one_info(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    outage = OutageLog(logger, "quota writes", clock=lambda: now[0])
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        outage.succeeded()  # no outage: nothing to say
        outage.failed("team/a", TimeoutError())
        outage.failed("team/b", aiohttp.ServerDisconnectedError())
        outage.failed("team/a", ApiException(status=503, reason="Service Unavailable"))
        now[0] = 112.5
        outage.succeeded()
        outage.succeeded()
    levels = [level for level, _ in said(caplog)]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG, logging.INFO]
    assert said(caplog)[0][1] == "quota writes failing (team/a: TimeoutError: ); retrying"
    assert said(caplog)[-1][1] == "quota writes succeed again after 12.5 s"


def test_a_refusal_is_said_each_time_and_is_no_outage(caplog: pytest.LogCaptureFixture) -> None:
    outage = OutageLog(logger, "quota writes")
    refusal = ApiException(status=422, reason="Unprocessable Entity")
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        outage.failed("team/a", refusal)
        outage.failed("team/a", refusal)
        outage.succeeded()
    assert (
        said(caplog)
        == [(logging.WARNING, "quota writes failed for team/a: HTTP 422: Unprocessable Entity")] * 2
    )
    assert outage.failing_since is None
