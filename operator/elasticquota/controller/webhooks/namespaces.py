"""The namespaces the pod webhooks never see: ``kube-system``, the operator's own and the ignored
ones; the cluster's own components must start whatever the operator's state.
"""

from __future__ import annotations

from pathlib import Path

from elasticquota.settings import Settings

#: Namespaces whose pods the pod webhooks never see: the cluster's own components must start
#: whatever the operator's state (besides the operator's own namespace and the ignored ones).
SYSTEM_NAMESPACES = ("kube-system",)
#: The namespace of the pod the operator runs in (absent outside a cluster).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def in_cluster_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str | None:
    """The namespace of the operator's pod, from its service account; None outside a cluster."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def pod_webhook_excluded_namespaces(
    settings: Settings, own_namespace: str | None = None
) -> tuple[str, ...]:
    """``kube-system``, the operator's own namespace (the Lease's, and its pod's when in a
    cluster: ``own_namespace``, read from the service account by default) and the ignored ones."""
    own = own_namespace if own_namespace is not None else in_cluster_namespace()
    names = {*SYSTEM_NAMESPACES, settings.effective_lease_namespace, *settings.ignore_namespaces}
    if own:
        names.add(own)
    return tuple(sorted(names))
