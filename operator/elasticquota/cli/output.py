"""``-o table|wide|json|yaml``: the one place where a command's result becomes text.

A command gives ``render`` its table (for people; ``wide`` adds columns where the command has
more to show, else it is the table) and its document (for programs). The document is a stable
contract (docs/cli.md): a mapping whose first keys are ``apiVersion`` (``API_VERSION``, changed
only with an incompatible change of a shape) and ``kind`` (which shape), then the command's own
keys; JSON and YAML carry the same document, keys in the same order.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

import yaml

FORMATS: Final = ("table", "wide", "json", "yaml")
#: The version of every document's shape; ``kind`` names the shape.
API_VERSION: Final = "elastic-quota.cli/v1"


def add_output_option(command: argparse.ArgumentParser) -> None:
    """``-o/--output table|wide|json|yaml`` (default: table)."""
    command.add_argument(
        "-o", "--output", choices=FORMATS, default="table",
        help="table (default), wide (more columns), json or yaml (stable documents: docs/cli.md)",
    )  # fmt: skip


def document(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """A versioned document: ``apiVersion``, ``kind``, then ``body``'s keys."""
    return {"apiVersion": API_VERSION, "kind": kind, **body}


def serialize(fmt: str, doc: Mapping[str, Any]) -> str:
    """A document as JSON (two-space indent) or YAML (block style), ending with a newline."""
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        dumped: str = yaml.safe_dump(
            dict(doc), sort_keys=False, default_flow_style=False, allow_unicode=True
        )
        return dumped
    raise ValueError(f"not a document format: {fmt}")


def render(
    fmt: str,
    *,
    doc: Callable[[], Mapping[str, Any]],
    table: Callable[[], str],
    wide: Callable[[], str] | None = None,
) -> str:
    """The text of ``fmt``: the document serialized, the wide table (else the table), or the
    table. Only the form asked for is built."""
    if fmt in ("json", "yaml"):
        return serialize(fmt, doc())
    if fmt == "wide" and wide is not None:
        return wide()
    return table()
