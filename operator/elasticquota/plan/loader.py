"""Read manifests from files and directories: multi-document YAML or JSON, ``List`` kinds included.

Only what cannot be read at all (a missing file, broken YAML) is an error
(``UnreadableInputError``).
Objects of kinds that ``plan`` does not use are kept aside with a note; objects without a kind are
problems. Directories are read recursively, ``*.yaml``, ``*.yml`` and ``*.json`` files in name
order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from elasticquota.core import keys
from elasticquota.core.model.models import Problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class _ManifestLoader(yaml.SafeLoader):
    """Safe YAML that keeps timestamps as text, as kubectl does: an unquoted
    ``startTime: 2026-01-01T00:00:00Z`` reaches the schema as a string, not a ``datetime``."""


def _timestamp_as_text(loader: _ManifestLoader, node: yaml.Node) -> str:
    assert isinstance(node, yaml.ScalarNode)
    return str(loader.construct_scalar(node))


_ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


class UnreadableInputError(Exception):
    """A path that does not exist or a file that is not valid YAML/JSON."""


@dataclass(slots=True)
class Manifests:
    """Raw objects by kind, in the order they were read."""

    quotas: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def load_paths(paths: Iterable[str | Path]) -> Manifests:
    """Every object in the given files and directories, sorted into kinds."""
    manifests = Manifests()
    for path in paths:
        for file in _files(Path(path)):
            for document in _documents(file):
                _sort(document, file, manifests)
    return manifests


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    if path.is_file():
        return [path]
    raise UnreadableInputError(f"{path}: no such file or directory")


def _documents(file: Path) -> list[Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableInputError(f"{file}: {error}") from None
    try:
        if file.suffix == ".json":
            return [json.loads(text)]
        documents = yaml.load_all(text, Loader=_ManifestLoader)
        return [document for document in documents if document is not None]
    except (ValueError, RecursionError, yaml.YAMLError) as error:
        raise UnreadableInputError(
            f"{file}: not valid {file.suffix[1:].upper()}: {error}"
        ) from None


def _flatten(document: Any) -> Iterator[Any]:
    """A ``List`` (kind ``List`` or ``*List``) yields its items; anything else itself."""
    if isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
        items = document.get("items") or []
        for item in items if isinstance(items, list) else [items]:
            yield from _flatten(item)
    else:
        yield document


def _sort(document: Any, file: Path, manifests: Manifests) -> None:
    for item in _flatten(document):
        if not isinstance(item, dict) or not item.get("kind"):
            manifests.problems.append(
                Problem(f"document in {file}", "not a Kubernetes object (no kind); skipped")
            )
            continue
        kind, group = item["kind"], str(item.get("apiVersion", "")).rpartition("/")[0]
        if kind == keys.QUOTA_KIND and group in keys.QUOTA_GROUPS:
            manifests.quotas.append(item)
        elif kind == keys.PROFILE_KIND and group == keys.PROFILE_GROUP:
            manifests.profiles.append(item)
        elif kind == "Pod" and group == "":
            manifests.pods.append(item)
        elif kind == "Node" and group == "":
            manifests.nodes.append(item)
        elif kind == "Namespace" and group == "":
            manifests.namespaces.append(item)
        elif kind == "PriorityClass" and group == "scheduling.k8s.io":
            manifests.priority_classes.append(item)
        else:
            metadata = item.get("metadata")
            name = metadata.get("name", "<unnamed>") if isinstance(metadata, dict) else "<unnamed>"
            manifests.skipped.append(f"{item.get('apiVersion', '')} {kind} {name} ({file})")
