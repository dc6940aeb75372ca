"""Duplicate keys in the lists Kubernetes merges by key, found with kubernetes-validate's schemas.

Some lists of the built-in kinds are maps keyed by fields of their entries: a pod's containers and
volumes by name, a container's env by name, its ports by containerPort and protocol, its
volumeMounts by mountPath, a Service's ports by port and protocol, a webhook configuration's
webhooks by name. Kubernetes itself keeps the last of two entries with one key, but server-side
apply refuses the object ("duplicate entries for key [name=...]"), and ``kubectl apply``,
``helm upgrade`` and GitOps diffs merge or flap between the two, so a rendered manifest must not
hold a key twice.

The keys are read from the OpenAPI schemas kubernetes-validate ships, not from a list kept by
hand: ``x-kubernetes-list-map-keys`` of a ``x-kubernetes-list-type: map`` list, else (older
schemas, where e.g. env has no list type yet) the ``x-kubernetes-patch-merge-key`` of a list
merged by strategic merge patch, which the API server's server-side apply treats as the same map
key. Lists of no type or ``atomic``/``set`` (RBAC rules, tolerations) are not keyed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import importlib_resources
from kubernetes_validate.utils import all_versions, major_minor

Schema = dict[str, Any]

#: What the API server fills in for a key field an entry leaves out, before it compares keys: a
#: port's protocol (the schemas carry no ``default`` for it; their descriptions say "Defaults to
#: TCP"). ``{port: 443}`` and ``{port: 443, protocol: TCP}`` are one entry.
KEY_DEFAULTS = {"protocol": "TCP"}


@functools.cache
def schema_file(version: str, name: str) -> Schema:
    """A file of kubernetes-validate's strict schemas for ``version``, picked as
    ``kubernetes_validate.validate`` picks it (the newest schemas not newer than ``version``)."""
    wanted = major_minor(version.removeprefix("v"))
    shipped = [each for each in all_versions() if major_minor(each) <= wanted][-1]
    folder = importlib_resources.files("kubernetes_validate") / "kubernetes-json-schema"
    schema: Schema = json.loads((folder / f"v{shipped}-local-strict" / name).read_text())
    return schema


def kind_schema(body: dict[str, Any], version: str) -> Schema | None:
    """The schema of the object's kind (``deployment-apps-v1.json``), None for a kind without."""
    group_version = body["apiVersion"]
    group, _, api_version = group_version.rpartition("/")
    prefix = f"{group.split('.')[0]}-" if group else ""
    try:
        return schema_file(version, f"{body['kind'].lower()}-{prefix}{api_version}.json")
    except FileNotFoundError:
        return None


def resolve(schema: Schema, version: str) -> Schema:
    """``schema`` with its ``$ref`` (to ``_definitions.json``'s ``$defs``) followed."""
    while isinstance(schema.get("$ref"), str):
        name = schema["$ref"].rpartition("#/$defs/")[2]
        schema = schema_file(version, "_definitions.json")["$defs"][name]
    return schema


def list_keys(schema: Schema) -> list[str]:
    """The fields the list described by ``schema`` is keyed by (none: not keyed)."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        return list(schema.get("x-kubernetes-list-map-keys") or [])
    merge_key = schema.get("x-kubernetes-patch-merge-key")
    merged = "merge" in str(schema.get("x-kubernetes-patch-strategy", "")).split(",")
    return [merge_key] if list_type is None and merged and merge_key else []


def entry_key(entry: Any, keys: list[str]) -> str | None:
    """``name=TZ`` or ``port=443,protocol=TCP``, as server-side apply names an entry; None for an
    entry that is not an object (strict validation reports it)."""
    if not isinstance(entry, dict):
        return None
    values = (entry.get(key, KEY_DEFAULTS.get(key)) for key in keys)
    return ",".join(f"{key}={value}" for key, value in zip(keys, values, strict=True))


def duplicates_in(value: Any, schema: Schema, version: str, path: str) -> Iterator[str]:
    """``path: [key] twice (entries i and j), merged by ...`` for every key held twice in a keyed
    list in ``value`` (of ``schema``) or below it."""
    schema = resolve(schema, version)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            below = properties.get(name, extra if isinstance(extra, dict) else None)
            if below is not None:
                yield from duplicates_in(item, below, version, f"{path}.{name}".lstrip("."))
    elif isinstance(value, list):
        keys = list_keys(schema)
        first: dict[str, int] = {}
        for index, entry in enumerate(value):
            key = entry_key(entry, keys) if keys else None
            if key is not None and key in first:
                yield (
                    f"{path}: [{key}] twice (entries {first[key]} and {index}); Kubernetes merges "
                    f"this list by {'+'.join(keys)}: server-side apply refuses it, kubectl apply "
                    "and helm upgrade merge the two"
                )
            elif key is not None:
                first[key] = index
            if isinstance(schema.get("items"), dict):
                yield from duplicates_in(entry, schema["items"], version, f"{path}[{index}]")


def duplicate_keys(body: dict[str, Any], versions: list[str]) -> list[str]:
    """Every duplicated merge key of the object, per the schemas of each of ``versions`` (each
    found once); none for a kind without a schema."""
    found: dict[str, None] = {}
    for version in versions:
        schema = kind_schema(body, version)
        if schema is not None:
            found.update(dict.fromkeys(duplicates_in(body, schema, version, "")))
    return list(found)
