"""No module of the package imports another module's private (underscore) name: what a module
shares is public, so that its users can be found and its privates changed freely (issue 14)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "elasticquota"


def private_imports(root: Path) -> list[str]:
    """``path: module.name`` of every ``from elasticquota... import _name`` under ``root``
    (dunders such as ``__version__`` are public by convention)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if not (node.module or "").startswith("elasticquota"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(root)}: {node.module}.{alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    assert private_imports(PACKAGE) == []


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from elasticquota.core.x import _hidden, shown\n")
    assert private_imports(tmp_path) == ["a.py: elasticquota.core.x._hidden"]
