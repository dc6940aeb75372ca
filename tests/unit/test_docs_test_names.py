"""docs/failure-modes.md names, for each statement, the test that checks it: every test file it
names exists (by its path, or by its name, which is unique across the tiers), and every test it
names is defined in the file named before it in its cell (``file.py::test_x``, then ``test_y`` of
the same file)."""

from __future__ import annotations

import re
from pathlib import Path

from repo_tools import ROOT

PAGE = ROOT / "docs" / "failure-modes.md"
TESTS = ROOT / "tests"
REFERENCE = re.compile(r"`([\w/.-]*?(test_\w+)\.py)(?:::(\w+))?`|`(test_\w+)`")


def named_file(name: str) -> Path | None:
    """The test file ``name`` stands for: a path from the repository's root, else a basename."""
    if "/" in name:
        path = ROOT / name
        return path if path.is_file() else None
    found = list(TESTS.rglob(name))
    return found[0] if len(found) == 1 else None


def missing(text: str) -> list[str]:
    """What the page's test cells name that does not exist."""
    absent = []
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cell = line.rstrip(" |").rsplit("|", 1)[-1]
        current, current_name = None, "(no file)"
        for match in REFERENCE.finditer(cell):
            name, _, test, bare = match.groups()
            if name is not None:
                current, current_name = named_file(name), name
                if current is None:
                    absent.append(name)
                    continue
            test = test or bare
            if test is None:
                continue
            if current is None or not re.search(rf"def {test}\b", current.read_text()):
                absent.append(f"{current_name}::{test}")
    return absent


def test_every_test_the_failure_modes_page_names_exists() -> None:
    text = PAGE.read_text()
    assert len(REFERENCE.findall(text)) > 40
    assert missing(text) == []


def test_the_check_sees_a_missing_file_test_and_fileless_test() -> None:
    text = (
        "| what | seen | `test_docs_test_names.py::test_the_check_sees_a_missing_file_test_and_"
        "fileless_test`, `test_no_such_test` |\n"
        "| what | seen | `tests/unit/test_no_such_file.py::test_x` |\n"
        "| what | seen | `test_alone` |\n"
    )
    assert missing(text) == [
        "test_docs_test_names.py::test_no_such_test",
        "tests/unit/test_no_such_file.py",
        "(no file)::test_alone",
    ]
