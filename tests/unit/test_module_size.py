"""No module of the operator, of its development tooling or of its benchmarks is longer than 400
lines.

A module that grows past it holds more than one duty: split it by duty into well-named modules
(issue 14, "Packages that name their parts"). There is no allow-list: every module is held to it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400


def lengths() -> dict[str, int]:
    """Every Python module under ``operator/``, ``devtools/`` and ``benchmarks/``, by path: its
    number of lines."""
    found: dict[str, int] = {}
    for top in ("operator", "devtools", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            found[path.relative_to(ROOT).as_posix()] = len(path.read_text().splitlines())
    return found


def test_the_scan_reads_the_modules() -> None:
    modules = lengths()
    assert "operator/elasticquota/core/solve/engine.py" in modules
    assert any(path.startswith("devtools/eqdev/") for path in modules)
    assert "benchmarks/scalebench/phases.py" in modules


def test_no_module_is_longer_than_the_limit() -> None:
    too_long = {path: length for path, length in lengths().items() if length > LIMIT}
    assert too_long == {}, f"split these by duty (at most {LIMIT} lines each): {too_long}"
