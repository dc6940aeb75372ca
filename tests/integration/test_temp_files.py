"""A killed operator leaves no temporary file: the kubeconfig's inline CA stays in memory.

The suite's kubeconfig carries the API server's CA inline (``certificate-authority-data``), which
``kubernetes_asyncio`` would write to a temporary file removed only at a normal exit. The operator
runs with a private ``TMPDIR``, becomes ready, is SIGKILLed, and the directory must be empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import OperatorProcess

pytestmark = pytest.mark.timeout(180)


async def test_a_killed_operator_leaves_no_temporary_file(tmp_path: Path) -> None:
    private = tmp_path / "tmp"
    private.mkdir()
    operator = OperatorProcess("temp-files", env={"TMPDIR": str(private)})
    operator.start()
    try:
        await operator.wait_ready()
        await operator.wait_active()
    finally:
        operator.kill()
    assert sorted(str(path) for path in private.rglob("*")) == [], operator.output()
