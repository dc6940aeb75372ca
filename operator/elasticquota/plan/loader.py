"""Read manifests from files and directories: multi-document YAML or JSON, ``List`` kinds included.

Only what cannot be read at all (a missing file, broken YAML) is an error
(``UnreadableInputError``).
Objects of kinds that ``plan`` does not use are kept aside with a note; objects without a kind are
problems. Directories are read recursively, ``*.yaml``, ``*.yml`` and ``*.json`` files in name
order; ``-`` is standard input (YAML, which reads JSON too). Where each object was read (file,
document) is kept for the problems' report.
"""

from __future__ import annotations

import codecs
import difflib
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from elasticquota.core import keys
from elasticquota.core.model.models import Problem
from elasticquota.plan.findings import NOTE, WARNING, InputFinding, Origin, object_ref

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: The path that names standard input (kubectl's ``-f -``), and how its objects' place names it.
STDIN = "-"
STDIN_NAME = "<stdin>"


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
    #: PodDisruptionBudgets: which victims' evictions would be refused (``core.decisions.budgets``).
    budgets: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: Where each object was read, by (kind, namespace, name): the last copy's place.
    origins: dict[tuple[str, str, str], Origin] = field(default_factory=dict)
    #: The notes on objects of kinds ``plan`` does not read (``skipped``), with their place.
    notes: list[Problem] = field(default_factory=list)
    #: What a cluster's reader could not read and the commands go on without (one line each).
    unread: list[str] = field(default_factory=list)


def load_paths(paths: Iterable[str | Path], stdin: TextIO | None = None) -> Manifests:
    """Every object in the given files and directories (``-``: ``stdin``, by default the
    process's standard input, as kubectl's ``-f -``), sorted into kinds. Reading nothing at all
    is an ``UnreadableInputError``, as kubectl's "no objects passed": a mistyped path or an empty
    directory must not pass a CI gate as a plan of nothing."""
    manifests, read, names = Manifests(), 0, []
    for path in paths:
        names.append(str(path))
        for origin, document in _read(path, stdin):
            _sort(document, origin, manifests)
            read += 1
    if not read:
        raise UnreadableInputError(f"no objects in {', '.join(names) or 'no file'}")
    return manifests


def _read(path: str | Path, stdin: TextIO | None) -> Iterator[tuple[Origin, Any]]:
    if str(path) == STDIN:
        try:
            text = (stdin or sys.stdin).read()
        except (OSError, UnicodeDecodeError) as error:
            raise UnreadableInputError(f"{STDIN_NAME}: {error}") from None
        yield from _parsed(text, STDIN_NAME, as_json=False)  # YAML reads JSON too
        return
    for file in _files(Path(path)):
        yield from _documents(file)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
        if not found:
            suffixes = ", ".join(MANIFEST_SUFFIXES)
            raise UnreadableInputError(f"{path}: a directory with no manifest file ({suffixes})")
        return found
    if path.is_file():
        return [path]
    raise UnreadableInputError(f"{path}: no such file or directory")


def _documents(file: Path) -> list[tuple[Origin, Any]]:
    """The file's documents (``_parsed``): JSON for a ``.json`` file, else YAML."""
    try:
        text = _decoded(file.read_bytes())
    except (OSError, UnicodeDecodeError) as error:
        raise UnreadableInputError(f"{file}: {error}") from None
    return _parsed(text, str(file), as_json=file.suffix == ".json")


def _decoded(data: bytes) -> str:
    """UTF-8 text, or UTF-8 / UTF-16 after a byte-order mark, which is dropped (as kubectl reads
    files: editors on Windows write one, and ``json`` refuses it)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")  # reads the mark for the byte order and drops it
    return data.decode("utf-8")


def _parsed(text: str, name: str, as_json: bool) -> list[tuple[Origin, Any]]:
    """The documents of ``text``, read from ``name``, with where each starts (empty YAML
    documents are left out, and still counted in the positions of the others)."""
    try:
        if as_json:
            return [(Origin(name, 0, 1), json.loads(text))]
        documents = list(yaml.load_all(text, Loader=_ManifestLoader))
        lines = _document_lines(text)
    except (ValueError, RecursionError, yaml.YAMLError) as error:
        language = "JSON" if as_json else "YAML"
        raise UnreadableInputError(f"{name}: not valid {language}: {error}") from None
    return [
        (Origin(name, index, lines[index] if index < len(lines) else None), document)
        for index, document in enumerate(documents)
        if document is not None
    ]


def _document_lines(text: str) -> list[int]:
    """The 1-based line each YAML document starts on (its content, past a ``---``)."""
    lines = []
    for event in yaml.parse(text, Loader=_ManifestLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            lines.append(-1)
        elif lines and lines[-1] == -1 and isinstance(event, yaml.NodeEvent):
            mark = event.start_mark
            lines[-1] = mark.line + 1 if mark is not None else 1
    return [line if line > 0 else 1 for line in lines]


def _flatten(document: Any) -> Iterator[Any]:
    """A ``List`` (kind ``List`` or ``*List``) yields its items; anything else itself."""
    if isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
        items = document.get("items") or []
        for item in items if isinstance(items, list) else [items]:
            yield from _flatten(item)
    else:
        yield document


def _sort(document: Any, origin: Origin, manifests: Manifests) -> None:
    file = origin.file
    for item in _flatten(document):
        if not isinstance(item, dict) or not item.get("kind"):
            manifests.problems.append(
                InputFinding(
                    f"document in {file}",
                    "not a Kubernetes object (no kind); skipped",
                    rule="no-kind",
                    source="input",
                    origin=origin,
                )
            )
            continue
        kind, group = item["kind"], str(item.get("apiVersion", "")).rpartition("/")[0]
        metadata = item.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        if not name and kind in READ_KINDS:
            manifests.problems.append(_unnamed(item, str(kind), namespace, origin))
            continue
        manifests.origins[(str(kind), namespace, name)] = origin
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
        elif kind == "PodDisruptionBudget" and group == "policy":
            manifests.budgets.append(item)
        else:
            _skip(item, str(kind), namespace, name or "<unnamed>", origin, manifests)


#: The kinds ``plan`` reads, each with the apiVersion to suggest for it.
READ_KINDS: dict[str, str] = {
    keys.QUOTA_KIND: f"{keys.QUOTA_GROUPS[0]}/v1alpha1",
    keys.PROFILE_KIND: f"{keys.PROFILE_GROUP}/v1alpha1",
    "Pod": "v1",
    "Node": "v1",
    "Namespace": "v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1",
}


def _unnamed(item: dict[str, Any], kind: str, namespace: str, origin: Origin) -> InputFinding:
    """An object of a kind plan reads without a name: it cannot be told from others (a quota
    is its name), so it is left out with its place in the file (``generateName`` names an
    object only when the API server creates it)."""
    metadata = item.get("metadata")
    if metadata is None:
        message = "no metadata"
    elif not isinstance(metadata, dict):
        message = "metadata is not a mapping"
    elif metadata.get("generateName"):
        message = "only metadata.generateName, which the API server completes at creation"
    else:
        message = "no metadata.name"
    return InputFinding(
        object_ref(kind, namespace, "<unnamed>"),
        f"{message}; skipped: plan reads objects by name",
        rule="no-name",
        source="input",
        origin=origin,
    )


def _skip(
    item: dict[str, Any], kind: str, namespace: str, name: str, origin: Origin, manifests: Manifests
) -> None:
    """An object plan does not read: a note, or a warning when it looks like one it reads with a
    typo in its kind or its API group (a quota that would be skipped without failing the gate)."""
    api_version = str(item.get("apiVersion", ""))
    ref = object_ref(kind, namespace, name)
    typed = f"{api_version} {kind}".strip()  # a manifest may lack its apiVersion
    manifests.skipped.append(f"{typed} {name} ({origin.file})")
    close = difflib.get_close_matches(kind, list(READ_KINDS), n=1, cutoff=0.8)
    if close:
        wanted = f"kind {close[0]}, apiVersion {READ_KINDS[close[0]]}"
        manifests.problems.append(
            InputFinding(
                ref,
                f"skipped: {typed} is not a kind plan reads; did you mean {wanted}?",
                rule="unknown-kind",
                source="input",
                severity=WARNING,
                origin=origin,
            )
        )
        return
    manifests.notes.append(
        InputFinding(
            ref,
            f"skipped: {typed} is not a kind plan reads",
            rule="skipped-kind",
            source="input",
            severity=NOTE,
            origin=origin,
        )
    )
