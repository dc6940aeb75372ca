"""What a run of the ``elastic-quota`` CLI ended with: exit code, stdout and stderr.

Shared by the CLI tests that start the real entry points in a process (``tests/unit/cli``) and the
``plan`` tests that call ``elasticquota.cli.main`` in-process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str

    def one_line_error(self) -> str:
        """The single ``error: ...`` line on stderr (no traceback, nothing on stdout)."""
        assert "Traceback" not in self.err, self.err
        assert self.out == "", self.out
        assert self.err.count("\n") == 1 and self.err.startswith("error: "), self.err
        return self.err.strip()

    def json(self) -> Any:
        """stdout as one JSON document."""
        return json.loads(self.out)
