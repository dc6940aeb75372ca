"""What every tier of the suite shares: no implicit event loop, no settings from the machine.

looptime's ``pytest_pyfunc_call`` asks the asyncio policy for the current loop around every test,
sync ones included; before any async test ran, Python 3.11 then creates a loop that nothing closes.
Dropped later, its ResourceWarning fails the run (``filterwarnings = error``), and when the
collector drops it in the middle of a ``compile`` (the hypothesis plugin's late import at the end
of a run of ``tests/unit/cli`` alone), CPython 3.11 adds a ``SystemError: AST constructor recursion
depth mismatch``. With the main thread's loop explicitly unset the policy raises instead, which
looptime handles; ``asyncio.run`` and pytest-asyncio make and close their own loops.

Settings come from the test alone, never from ``ELASTIC_QUOTA_*`` variables of the machine (a
test that wants one sets it; an operator a test starts gets the environment the test gives it).
"""

from __future__ import annotations

import asyncio
import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("ELASTIC_QUOTA_"):
            monkeypatch.delenv(name)
