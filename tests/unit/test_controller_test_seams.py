"""Controller tests construct what they need (docs/architecture.md, "Tests construct what they
need"): what a test watches or breaks is passed in at construction, so none of them replaces a
module's name with ``monkeypatch``. The one exception is a spy, named here: ``test_solving.py``
wraps ``QuotaResult.__eq__`` to see on which thread results are compared."""

from __future__ import annotations

import re
from pathlib import Path

CONTROLLER_TESTS = Path(__file__).resolve().parent / "controller"
SPIES = {("test_solving.py", "QuotaResult")}
REPLACEMENT = re.compile(r"monkeypatch\.setattr\(\s*([\w.]+|\"[^\"]*\"|'[^']*')")


def replaced_names(directory: Path) -> set[tuple[str, str]]:
    """(module file, what it hands ``monkeypatch.setattr`` first) for each test module."""
    return {
        (path.name, match.group(1))
        for path in sorted(directory.glob("*.py"))
        for match in REPLACEMENT.finditer(path.read_text())
    }


def test_no_controller_test_replaces_a_name() -> None:
    assert replaced_names(CONTROLLER_TESTS) - SPIES == set()


def test_the_check_sees_a_replaced_module_name(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        'monkeypatch.setattr(certrotation, "START_RETRY", 0.01)\n'
        'monkeypatch.setattr("elasticquota.kube.pods.sleep", fake)\n'
    )
    assert replaced_names(tmp_path) == {
        ("test_x.py", "certrotation"),
        ("test_x.py", '"elasticquota.kube.pods.sleep"'),
    }
