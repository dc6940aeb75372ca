"""The cluster settings: how the operator reaches the API server and how it talks to it.

Where the credentials come from (a kubeconfig, else the service account), how long one request may
take, how many quota writes run at once, whether the readers list from the API server's watch cache,
and ``dry_run``, under which nothing is written at all. The readers, the writer, the evictor and the
leader election all go through these.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from elasticquota.settings.values import FilePath


class ClusterSettings(BaseModel):
    """The connection to the API server and the bounds of its requests."""

    kubeconfig: FilePath | None = None
    """Path of a kubeconfig; unset: $KUBECONFIG, else ~/.kube/config when it exists, else the
    in-cluster service account."""

    dry_run: bool = False
    """Compute and log, but write nothing to the cluster."""

    write_concurrency: int = Field(default=16, ge=1, le=1024)
    """How many quota writes may be in flight at once."""

    api_timeout: float = Field(default=10.0, ge=0.1, le=30)
    """Seconds after which an API request other than a watch (quota writes, evictions, Events,
    the Lease, gate releases) is abandoned; it is then retried on a fresh connection. Bounds how
    long a connection that silently stopped carrying traffic can hold a write. At most 30 s, the
    bound of one attempt of ``kube.errors.with_retries``."""

    list_from_cache: bool = True
    """List pods, quotas, profiles and nodes from the API server's watch cache (``resourceVersion``
    set, as client-go does; one gzipped response, drained off the connection as it comes so that
    the API server's request timeout does not cut it, parsed as a stream behind), falling back to
    a paged list from etcd when its answer is not one whole list or the cache cannot serve the
    version (a throttled or failing cache is asked again after a wait, not moved onto etcd). Off:
    always the paged list (``limit`` + ``continue``), which costs the API server far more CPU at
    start-up and after every relist."""
