"""A label read under several names is read in one place (docs/architecture.md: "any aliased label
by ``core.keys.first_label``, nowhere else"): no module of the package walks one of the alias
tuples of ``core.keys`` itself, where the order of the names and what counts as set could drift
from ``first_label``'s."""

from __future__ import annotations

import ast
from pathlib import Path

from elasticquota.core import keys

KEYS = Path(keys.__file__).resolve()
PACKAGE = KEYS.parents[1]
LABEL_ALIASES = frozenset(
    name for name in vars(keys) if name.endswith("_ALIASES") and "LABEL" in name
)


def alias_walks(source: str) -> list[int]:
    """The lines of ``source`` that iterate over a label alias tuple of ``core.keys`` (imported by
    name, renamed or not, or read as ``keys.X``)."""
    tree = ast.parse(source)
    bound = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "elasticquota.core.keys"
        for alias in node.names
        if alias.name in LABEL_ALIASES
    }

    def is_aliases(expression: ast.expr) -> bool:
        if isinstance(expression, ast.Name):
            return expression.id in bound
        return isinstance(expression, ast.Attribute) and expression.attr in LABEL_ALIASES

    walks = [node.iter for node in ast.walk(tree) if isinstance(node, ast.For | ast.comprehension)]
    return sorted(walk.lineno for walk in walks if is_aliases(walk))


def test_no_module_reads_an_aliased_label_itself() -> None:
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != KEYS and (lines := alias_walks(path.read_text()))
    }
    assert found == {}


def test_the_check_sees_a_walk_by_any_name() -> None:
    assert {"LABEL_PARENT_ALIASES", "POD_LABEL_QUOTA_ALIASES"} <= LABEL_ALIASES
    source = (
        "from elasticquota.core import keys\n"
        "from elasticquota.core.keys import POD_LABEL_APPLICATION_ALIASES as APPS\n"
        "for key in keys.POD_LABEL_QUOTA_ALIASES:\n    pass\n"
        "values = [labels.get(key) for key in APPS]\n"
        "known = (*keys.LABEL_PARENT_ALIASES, 'x')\n"
    )
    assert alias_walks(source) == [3, 5]
