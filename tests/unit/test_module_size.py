"""No Python module of the repository is longer than 400 lines: the operator, its development
tooling, its benchmarks, the chart's tools and the tests.

A module that grows past it holds more than one duty: split it by duty into well-named modules
(issue 14, "Packages that name their parts"); a test module, by what its tests are about, with the
builders they share in a helper module or the directory's conftest.py. There is no allow-list:
every module is held to it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400
#: Where the repository's Python lives (``.venv`` and caches are not below any of them).
TOPS = ("operator", "devtools", "benchmarks", "manifests", "tests")


def lengths() -> dict[str, int]:
    """Every Python module under ``TOPS``, by path: its number of lines."""
    found: dict[str, int] = {}
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            found[path.relative_to(ROOT).as_posix()] = len(path.read_text().splitlines())
    return found


def test_the_scan_reads_the_modules() -> None:
    modules = lengths()
    assert "operator/elasticquota/core/solve/engine.py" in modules
    assert any(path.startswith("devtools/eqdev/") for path in modules)
    assert "benchmarks/scalebench/phases.py" in modules
    assert "tests/unit/test_module_size.py" in modules
    assert "manifests/tools/render_plain.py" in modules


def test_no_module_is_longer_than_the_limit() -> None:
    too_long = {path: length for path, length in lengths().items() if length > LIMIT}
    assert too_long == {}, f"split these by duty (at most {LIMIT} lines each): {too_long}"
