"""Validate rendered manifests against the Kubernetes OpenAPI schemas (kubernetes-validate, strict).

Every object of a built-in kind is validated with ``kubernetes_validate`` in strict mode (unknown
fields are errors) for each ``--kubernetes-version``. Objects of the custom kinds the chart may
render (Prometheus Operator's, cert-manager's) have no schema there: they are listed as skipped,
by group, and checked by the server dry-run of tests/integration/test_chart_dry_run.py instead.
Any other object without a schema is an error (a typo in an apiVersion must not pass as
"custom").

The schemas do not check that a list Kubernetes merges by key (a container's env by name, a
Service's ports by port and protocol, ...) holds each key once: ``merge_keys`` does, with the keys
these schemas give, and a key held twice is an error naming the list and the key (server-side
apply refuses such an object; kubectl apply and helm upgrade merge the two entries).

Usage: validate_manifests.py [-k VERSION]... FILE...   (``-`` reads standard input)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError
from merge_keys import duplicate_keys

#: API groups of custom kinds the chart may render, with the project that defines them.
CUSTOM_GROUPS = {
    "monitoring.coreos.com": "Prometheus Operator",
    "cert-manager.io": "cert-manager",
}


def load(name: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if name == "-" else Path(name).read_text()
    return [body for body in yaml.safe_load_all(text) if body]


def describe(body: dict[str, Any]) -> str:
    metadata = body.get("metadata") or {}
    namespace = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{body.get('apiVersion')} {body.get('kind')} {namespace}{metadata.get('name')}"


def validate(
    name: str, body: dict[str, Any], versions: list[str], skipped: Counter[str]
) -> list[str]:
    """The errors of one object (empty: valid, or a known custom kind)."""
    if not isinstance(body, dict) or not all(key in body for key in ("apiVersion", "kind")):
        return [f"{name}: not a Kubernetes object: {str(body)[:80]}"]
    if not (body.get("metadata") or {}).get("name"):
        return [f"{name}: {describe(body)}: no metadata.name"]
    group = body["apiVersion"].rpartition("/")[0]
    if group in CUSTOM_GROUPS:
        skipped[f"{body['kind']} ({CUSTOM_GROUPS[group]})"] += 1
        return []
    errors = []
    for version in versions:
        try:
            kubernetes_validate.validate(body, version, strict=True)
        except ValidationError as error:
            path = ".".join(str(item) for item in error.path)
            errors.append(
                f"{name}: {describe(body)} (Kubernetes {version}): {path}: {error.message}"
            )
        except SchemaNotFoundError:
            errors.append(
                f"{name}: {describe(body)}: no such kind in Kubernetes {version} "
                "(not a known custom kind either)"
            )
    return errors + [
        f"{name}: {describe(body)}: {found}" for found in duplicate_keys(body, versions)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-k", "--kubernetes-version", dest="versions", action="append", required=True
    )
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    errors: list[str] = []
    skipped: Counter[str] = Counter()
    checked = 0
    for name in args.files:
        for body in load(name):
            found = validate(name, body, args.versions, skipped)
            errors += found
            checked += 0 if found else 1
    for error in errors:
        print(f"ERROR {error}")
    validated = checked - sum(skipped.values())
    versions = ", ".join(args.versions)
    print(
        f"{' '.join(args.files)}: {validated} objects valid (strict) against Kubernetes {versions}"
        + (f"; skipped custom kinds: {dict(sorted(skipped.items()))}" if skipped else "")
        + (f"; {len(errors)} error(s)" if errors else "")
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
