"""``kubectl apply -f examples/`` creates every object after what it needs.

kubectl applies a directory's files in the order of their names and stops at nothing: a pod whose
PriorityClass does not exist yet is refused (the API server's Priority admission), an object in a
namespace that does not exist yet too. The examples' file names keep that order (namespaces, nodes,
PriorityClasses, the profile, the quotas, then the workloads), which this test holds. One wait is
left that no order removes: the profile's root quota is written by the operator, so with the
webhooks on its two child quotas are refused until it is there (examples/README.md says so).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PARENT_LABEL = "quota.scheduling.koordinator.sh/parent"


def objects(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a manifest file, a ``List``'s items included."""
    for document in yaml.safe_load_all(path.read_text()):
        if not document:
            continue
        yield from document["items"] if document["kind"] == "List" else [document]


def needs(manifest: dict[str, Any], profile_roots: set[str]) -> Iterator[tuple[str, str]]:
    """What must exist before ``manifest`` is created: (kind, name)."""
    namespace = manifest["metadata"].get("namespace")
    if namespace:
        yield "Namespace", namespace
    if manifest["kind"] == "Pod" and "priorityClassName" in manifest["spec"]:
        yield "PriorityClass", manifest["spec"]["priorityClassName"]
    parent = manifest["metadata"].get("labels", {}).get(PARENT_LABEL)
    if manifest["kind"] == "ElasticQuota" and parent and parent not in profile_roots:
        yield "ElasticQuota", parent


def test_kubectl_apply_of_the_directory_creates_what_an_object_needs_before_it() -> None:
    files = sorted(EXAMPLES.glob("*.yaml"))  # kubectl walks a directory in name order
    everything = [manifest for path in files for manifest in objects(path)]
    profile_roots = {m["spec"]["quotaName"] for m in everything if m["kind"].endswith("Profile")}
    created: set[tuple[str, str]] = set()
    missing = []
    for path in files:
        for manifest in objects(path):
            kind, name = manifest["kind"], manifest["metadata"]["name"]
            missing += [
                f"{path.name}: {kind} {name} before the {need_kind} {need} it needs"
                for need_kind, need in needs(manifest, profile_roots)
                if (need_kind, need) not in created
            ]
            created.add((kind, name))
    assert missing == []
