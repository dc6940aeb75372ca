"""Every test module has a basename of its own across the tiers: the suite collects the tiers
together without packages, and two ``test_x.py`` in two directories make pytest stop at
collection ("import file mismatch") before running anything."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def shared_basenames(root: Path) -> list[str]:
    """Basenames of test modules and helpers found in more than one directory under ``root``
    (``conftest.py`` excepted: pytest loads each one by its path)."""
    names = Counter(path.name for path in root.rglob("*.py") if path.name != "conftest.py")
    return sorted(name for name, count in names.items() if count > 1)


def test_no_two_test_modules_share_a_basename() -> None:
    assert shared_basenames(TESTS) == []


def test_the_check_sees_a_shared_basename(tmp_path: Path) -> None:
    for tier in ("unit", "integration"):
        (tmp_path / tier).mkdir()
        (tmp_path / tier / "test_cli.py").write_text("")
        (tmp_path / tier / "conftest.py").write_text("")
    assert shared_basenames(tmp_path) == ["test_cli.py"]
