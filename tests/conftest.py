"""What every tier of the suite shares: no implicit event loop.

looptime's ``pytest_pyfunc_call`` asks the asyncio policy for the current loop around every test,
sync ones included; before any async test ran, Python 3.11 then creates a loop that nothing closes.
Dropped later, its ResourceWarning fails the run (``filterwarnings = error``), and when the
collector drops it in the middle of a ``compile`` (the hypothesis plugin's late import at the end
of a run of ``tests/unit/cli`` alone), CPython 3.11 adds a ``SystemError: AST constructor recursion
depth mismatch``. With the main thread's loop explicitly unset the policy raises instead, which
looptime handles; ``asyncio.run`` and pytest-asyncio make and close their own loops.
"""

from __future__ import annotations

import asyncio

import pytest


def pytest_configure(config: pytest.Config) -> None:
    asyncio.set_event_loop(None)
