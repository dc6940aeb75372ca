"""The import layers the docs state are the contracts ``lint-imports`` checks.

docs/architecture.md quotes every layers contract of ``pyproject.toml`` (``[tool.importlinter]``)
as a chain, ``runner > ingest | reconcile | ... > echoes``, and docs/development.md quotes the
package-wide ones; a layer added to a contract without the docs following fails here.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
from repo_tools import ROOT

CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]
#: Stated in words, not as a chain: the settings' groups (architecture.md: "independent of each
#: other, below model and messages"), the benchmark's parts (development.md: "from its phases down
#: to its options").
IN_WORDS = ("Settings: messages > model > groups > values", "The cluster-scale benchmark")
#: The contracts docs/development.md quotes as chains.
IN_DEVELOPMENT = ("Layers:", "Controller:", "Core:", "Development tooling:")


def chain(contract: dict[str, Any]) -> str:
    """The contract's layers as the docs write them: top first, ``>`` between layers, packages
    named without their container (``cli``, ``demo``, ``reconciler``)."""
    prefixes = [f"{container}." for container in contract.get("containers", [])]
    prefixes += ["elasticquota.", "eqdev."]

    def short(module: str) -> str:
        for prefix in prefixes:
            if module.startswith(prefix):
                return module.removeprefix(prefix)
        return module

    def layer(text: str) -> str:
        return re.sub(r"[\w.]+", lambda name: short(name.group(0)), text)

    return " > ".join(layer(text) for text in contract["layers"])


def layered(names: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    return [
        contract
        for contract in CONTRACTS
        if contract["type"] == "layers"
        and not contract["name"].startswith(IN_WORDS)
        and (names is None or contract["name"].startswith(names))
    ]


def flat(path: str) -> str:
    """The page with its lines joined (a chain may wrap) and its code quotes dropped."""
    return " ".join((ROOT / path).read_text().replace("`", "").split())


@pytest.mark.parametrize("contract", layered(), ids=lambda contract: contract["name"])
def test_the_architecture_page_states_each_layers_contract(contract: dict[str, Any]) -> None:
    assert chain(contract) in flat("docs/architecture.md"), contract["name"]


@pytest.mark.parametrize("contract", layered(IN_DEVELOPMENT), ids=lambda contract: contract["name"])
def test_the_development_page_states_the_package_wide_contracts(contract: dict[str, Any]) -> None:
    assert chain(contract) in flat("docs/development.md"), contract["name"]


def test_the_chains_are_found() -> None:
    assert len(layered()) >= 12
    assert len(layered(IN_DEVELOPMENT)) == len(IN_DEVELOPMENT)
    controller = next(c for c in CONTRACTS if c["name"].startswith("Controller:"))
    assert chain(controller).startswith("runner > ingest | reconcile")
