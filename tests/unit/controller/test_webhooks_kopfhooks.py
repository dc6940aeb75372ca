"""Kopf's private members the operator uses: all in ``kopfhooks``, checked at start-up.

Rules (controller/webhooks/kopfhooks.py): no other module of the package imports a private module
of Kopf or reads a private name of it; the installed Kopf has every hook; a Kopf that lacks one
(its module, the member, or a parameter the member must take) is an ``UnsupportedKopfError``
naming each one missing, the installed Kopf's version and the versions tested: from the lower
bound pyproject.toml declares to the version constraints.txt pins.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
import types
from importlib import metadata
from pathlib import Path
from typing import Any

import kopf
import pytest
from packaging.requirements import Requirement

from elasticquota.controller.webhooks import kopfhooks
from elasticquota.controller.webhooks.kopfhooks import (
    ADMISSION,
    BUILD_WEBHOOKS,
    SERVING_HOOKS,
    UnsupportedKopfError,
    kopf_problem,
    require_kopf_hooks,
)

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "operator" / "elasticquota"
EVERY_HOOK = (*SERVING_HOOKS, BUILD_WEBHOOKS)
#: The names of Kopf's errors of a review it cannot serve.
REVIEW_ERRORS = ("AmbiguousResourceError", "UnknownResourceError", "WebhookError")


def kopf_range() -> str:
    """``LOWEST to PINNED``: pyproject.toml's lower bound for Kopf, constraints.txt's pin."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [kopf] = [Requirement(text) for text in project["dependencies"] if text.startswith("kopf")]
    [lowest] = [spec.version for spec in kopf.specifier if spec.operator == ">="]
    pinned = re.search(r"^kopf==(\S+)$", (ROOT / "constraints.txt").read_text(), re.MULTILINE)
    assert pinned is not None
    return f"{lowest} to {pinned[1]}"


class MemoGetter:
    """A stand-in for Kopf's interface of the memories its admission function recalls from."""

    async def recall_memo(self, raw_body: object, *, memobase: object = None) -> object:
        return memobase


async def serve_admission_request(
    request: object, *, memories: MemoGetter, registry: object, **_: object
) -> None:
    """A stand-in for Kopf's admission function."""


def build_webhooks(handlers: object, **_: object) -> list[dict[str, Any]]:
    """A stand-in for Kopf's builder of the managed configurations' webhooks."""
    return []


def admission(**replacing: object) -> types.ModuleType:
    """A stand-in for Kopf's admission engine with a member of each name the hooks look up, but
    those ``replacing`` gives instead (None: left out)."""
    members = {
        "MemoGetter": MemoGetter,
        "serve_admission_request": serve_admission_request,
        "build_webhooks": build_webhooks,
        **{name: type(name, (Exception,), {}) for name in REVIEW_ERRORS},
        **replacing,
    }
    stand_in = types.ModuleType(ADMISSION)
    stand_in.__dict__.update({name: member for name, member in members.items() if member})
    return stand_in


def test_the_installed_kopf_has_every_hook() -> None:
    require_kopf_hooks(EVERY_HOOK)
    require_kopf_hooks(EVERY_HOOK, lambda name: admission())  # the stand-in is complete too


def test_a_kopf_without_a_hook_is_named_with_the_versions_tested() -> None:
    stand_in = admission(build_webhooks=None)
    require_kopf_hooks(SERVING_HOOKS, lambda name: stand_in)  # what it does not need
    with pytest.raises(UnsupportedKopfError) as raised:
        require_kopf_hooks(EVERY_HOOK, lambda name: stand_in)
    assert str(raised.value) == (
        f"kopf {metadata.version('kopf')} lacks kopf._core.engines.admission.build_webhooks (the "
        "pod webhooks' namespaceSelector); elastic-quota-operator is tested with kopf "
        f"{kopf_range()}"
    )


def test_run_says_what_the_kopf_lacks_for_the_webhooks_it_serves_before_starting() -> None:
    """``elastic-quota run`` prints this and exits 7 (cli.errors.EXIT_UNSUPPORTED_KOPF)."""
    stand_in = admission(build_webhooks=None)
    assert kopf_problem(True, False, lambda name: stand_in) is None  # not managed: not needed
    assert kopf_problem(False, True, lambda name: stand_in) is None  # no webhooks at all
    problem = kopf_problem(True, True, lambda name: stand_in)
    assert problem is not None and "lacks kopf._core.engines.admission.build_webhooks" in problem
    assert kopf_problem(True, True) is None  # the installed Kopf


def test_a_member_without_the_parameter_the_operator_passes_is_missing() -> None:
    async def takes_no_memories(request: object, **_: object) -> None:
        """Kopf's admission function, if it took its memories under another name."""

    stand_in = admission(serve_admission_request=takes_no_memories)
    with pytest.raises(UnsupportedKopfError, match=re.escape("serve_admission_request(memories=")):
        require_kopf_hooks(SERVING_HOOKS, lambda name: stand_in)


def test_the_registry_bound_to_kopfs_admission_function_is_found() -> None:
    registry = kopf.OperatorRegistry()
    bound = functools.partial(serve_admission_request, memories=MemoGetter(), registry=registry)
    assert kopfhooks.bound_registry(bound) is registry
    assert kopfhooks.bound_registry(functools.partial(serve_admission_request, registry=1)) is None
    assert kopfhooks.bound_registry(serve_admission_request) is None  # a server's own function


def test_a_method_is_looked_up_on_its_class() -> None:
    stand_in = admission(MemoGetter=type("MemoGetter", (), {}))
    with pytest.raises(UnsupportedKopfError, match=re.escape("MemoGetter.recall_memo (")):
        require_kopf_hooks(SERVING_HOOKS, lambda name: stand_in)


def test_a_kopf_without_the_module_names_every_hook_of_it() -> None:
    def no_module(name: str) -> types.ModuleType:
        raise ModuleNotFoundError(f"No module named {name!r}")

    with pytest.raises(UnsupportedKopfError) as raised:
        require_kopf_hooks(EVERY_HOOK, no_module)
    for hook in EVERY_HOOK:
        assert f"{hook} ({hook.use})" in str(raised.value)


def test_the_newest_kopf_tested_is_the_pinned_one() -> None:
    """A pin moved by ``make constraints`` fails here until the hooks were checked on it."""
    assert kopf_range().endswith(f" to {kopfhooks.TESTED_KOPF}")


def private_uses(tree: ast.AST) -> list[str]:
    """The private modules of Kopf a module imports and the private names it reads of ``kopf``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("kopf._")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopf._"):
            found.append(str(node.module))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "kopf"
            and node.attr.startswith("_")
        ):
            found.append(f"kopf.{node.attr}")
    return found


def test_no_other_module_touches_kopfs_private_members() -> None:
    """Logger names (``kopf._core.engines.peering``) are strings, not members: not counted."""
    uses = {
        str(path.relative_to(PACKAGE)): private_uses(ast.parse(path.read_text()))
        for path in PACKAGE.rglob("*.py")
    }
    assert private_uses(ast.parse("import kopf._cogs\nfrom kopf._core import x\nkopf._y")) == [
        "kopf._cogs", "kopf._core", "kopf._y",
    ]  # fmt: skip
    assert {path: found for path, found in uses.items() if found} == {}
    assert "kopf._core" in (PACKAGE / "controller/webhooks/kopfhooks.py").read_text()
