"""The project's CRDs on a local control plane: read from ``crds/``, created or replaced through
the API (kubernetes_asyncio, not kubectl), and waited for until each is ``Established``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from eqdev.cluster.cluster import POLL_INTERVAL, ClusterError


def default_crd_dir() -> Path:
    """The repository's ``crds/`` directory (or ``./crds`` when installed elsewhere)."""
    in_repo = Path(__file__).resolve().parents[3] / "crds"
    return in_repo if in_repo.is_dir() else Path.cwd() / "crds"


def load_crds(crd_dir: Path) -> list[dict[str, Any]]:
    """Every ``CustomResourceDefinition`` document in ``crd_dir/*.yaml`` (sorted by file name)."""
    documents: list[dict[str, Any]] = []
    for path in sorted(crd_dir.glob("*.yaml")):
        with path.open(encoding="utf-8") as handle:
            for document in yaml.safe_load_all(handle):
                if (
                    isinstance(document, dict)
                    and document.get("kind") == "CustomResourceDefinition"
                ):
                    documents.append(document)
    if not documents:
        raise ClusterError(f"no CustomResourceDefinition found in {crd_dir}/*.yaml")
    return documents


def _established(crd: Any) -> tuple[bool, str | None]:
    """Whether a CRD is Established, and why not if its names were rejected."""
    conditions: Iterable[Any] = getattr(getattr(crd, "status", None), "conditions", None) or ()
    for condition in conditions:
        if condition.type == "NamesAccepted" and condition.status == "False":
            return False, f"names not accepted: {condition.message}"
        if condition.type == "Established" and condition.status == "True":
            return True, None
    return False, None


def _api_error_message(error: Any) -> str:
    """``HTTP 422: <the Status message>`` from a kubernetes_asyncio ApiException."""
    try:
        message = json.loads(error.body)["message"]
    except (TypeError, ValueError, KeyError):
        message = error.reason
    return f"HTTP {error.status}: {message}"


async def _create_or_replace(api: Any, document: dict[str, Any]) -> None:
    from kubernetes_asyncio.client.exceptions import ApiException

    name = str(document["metadata"]["name"])
    try:
        try:
            await api.create_custom_resource_definition(body=document)
        except ApiException as error:
            if error.status != 409:
                raise
            existing = await api.read_custom_resource_definition(name)
            version = existing.metadata.resource_version
            body = {**document, "metadata": {**document["metadata"], "resourceVersion": version}}
            await api.replace_custom_resource_definition(name, body=body)
    except ApiException as error:
        raise ClusterError(f"CRD {name} was refused: {_api_error_message(error)}") from None


async def apply_crds(kubeconfig: Path, crd_dir: Path, *, timeout: float = 60.0) -> list[str]:
    """Create or replace every CRD of ``crd_dir`` and wait until each is Established."""
    from kubernetes_asyncio import client, config  # the operator's dependency; imported lazily

    documents = load_crds(crd_dir)
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration=configuration) as api_client:
        api = client.ApiextensionsV1Api(api_client)
        for document in documents:
            await _create_or_replace(api, document)
        names = [str(document["metadata"]["name"]) for document in documents]
        deadline = time.monotonic() + timeout
        for name in names:
            await _wait_established(api, name, deadline)
    return names


async def _wait_established(api: Any, name: str, deadline: float) -> None:
    while True:
        established, problem = _established(await api.read_custom_resource_definition(name))
        if established:
            return
        if problem is not None:
            raise ClusterError(f"CRD {name}: {problem}")
        if time.monotonic() > deadline:
            raise ClusterError(f"CRD {name} is not Established in time")
        await asyncio.sleep(POLL_INTERVAL)


def apply_crds_sync(kubeconfig: Path, crd_dir: Path, *, timeout: float = 60.0) -> list[str]:
    """:func:`apply_crds` for synchronous callers (runs its own event loop)."""
    return asyncio.run(apply_crds(kubeconfig, crd_dir, timeout=timeout))
