"""The settings' groups: each concern's module holds a group, every group is assembled into
``Settings``, every setting belongs to exactly one group and is documented where it is defined.

A group left out of ``Settings``' bases would drop its settings silently (their variables would be
ignored); a setting without its docstring has no documentation anywhere but the README's table.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from types import ModuleType

from pydantic import BaseModel

import elasticquota.settings as package
from elasticquota.settings import Settings

#: The package's modules that are not groups of settings.
NOT_GROUPS = {"model", "messages", "values"}


def group_modules() -> list[ModuleType]:
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__))
    return [
        importlib.import_module(f"{package.__name__}.{name}")
        for name in names
        if name not in NOT_GROUPS
    ]


def groups_of(module: ModuleType) -> list[type[BaseModel]]:
    return [
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
    ]


def test_each_concern_has_one_group_with_its_documentation() -> None:
    modules = group_modules()
    assert {module.__name__.rsplit(".", 1)[1] for module in modules} == {
        "cluster",
        "engine",
        "revocation",
        "gating",
        "userlimits",
        "observability",
        "lease",
        "webhooks",
    }
    for module in modules:
        assert module.__doc__, f"{module.__name__}: no docstring saying what the group governs"
        assert len(groups_of(module)) == 1, module.__name__


def test_every_group_is_assembled_and_every_setting_has_one_group() -> None:
    owners: dict[str, str] = {}
    for module in group_modules():
        (group,) = groups_of(module)
        assert group in Settings.__mro__, f"{group.__name__} is not a base of Settings"
        for name in group.model_fields:
            assert name not in owners, f"{name} in {owners.get(name)} and {group.__name__}"
            owners[name] = group.__name__
    assert sorted(owners) == sorted(Settings.model_fields)


def test_the_groups_rules_hold_in_settings() -> None:
    """pydantic collects the validators of the bases: a rule of a group refuses values in
    ``Settings`` (here the lease's, the webhooks' and the observability group's)."""
    decorators = Settings.__pydantic_decorators__
    assert {
        "_retry_within_the_lease",
        "_renew_deadline_within_the_lease",
        "_cert_and_key_together",
        "_one_certificate_source",
        "_two_servers_two_ports",
    } <= set(decorators.model_validators)
    assert Settings(identity="x", log_level="debug").log_level == "DEBUG"


def test_every_setting_is_documented_where_it_is_defined() -> None:
    undocumented = []
    for module in group_modules():
        (group,) = groups_of(module)
        (definition,) = ast.parse(inspect.getsource(group)).body
        assert isinstance(definition, ast.ClassDef)
        body = definition.body
        for statement, after in zip(body, [*body[1:], None], strict=True):
            if not isinstance(statement, ast.AnnAssign):
                continue
            documented = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            if not documented:
                undocumented.append(ast.unparse(statement.target))
    assert undocumented == []
