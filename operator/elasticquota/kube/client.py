"""One API client for the operator and the CLI: from a kubeconfig, $KUBECONFIG, or in-cluster."""

from __future__ import annotations

import os

from kubernetes_asyncio import client, config


async def make_api_client(kubeconfig: str | None = None) -> client.ApiClient:
    """An ApiClient: ``kubeconfig``, else $KUBECONFIG or ~/.kube/config, else in-cluster."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    configuration = client.Configuration()
    if path or os.path.exists(os.path.expanduser("~/.kube/config")):
        await config.load_kube_config(config_file=path, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration=configuration)
