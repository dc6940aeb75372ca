"""How a quota's computed figures reach the API server: its annotations and ``status.used``.

Koordinator's ElasticQuota CRD, scheduler-plugins' and the one this project ships have no status
subresource: the reference writes both in one JSON merge patch of the object, and so does this
writer (one request per changed quota, where a status subresource takes two: the API server's CPU
per patch is what bounds the writes of a large cluster). A CRD that has a status subresource (an
older CRD of this project, another distribution's) makes the object's own patch leave ``status``
alone, and ``/status`` is then the only way to it; a CRD without one answers 404 there.

Which route the cluster's CRD takes is learned from the answers, both ways, and said once in the
log when it changes: an object patch whose answer does not hold the ``used`` it carried means a
status subresource (the status goes through it at once, and from then on); a 404 from ``/status``
for an object that a patch of its own then finds means none. A CRD replaced while the operator
runs is followed the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.api import Body
from elasticquota.kube import quotas
from elasticquota.kube.errors import with_retries

logger = logging.getLogger(__name__)

#: Keys to set, or to delete where the value is None (merge-patch null).
Changes = Mapping[str, str | None]


def figures_patch(annotations: Changes | None, used: Changes | None) -> Body:
    """One merge patch of the object: ``annotations`` (if any) and ``status.used`` (unless None)."""
    patch: Body = {}
    if annotations:
        patch["metadata"] = {"annotations": dict(annotations)}
    if used is not None:
        patch["status"] = {"used": dict(used)}
    return patch


def holds_used(body: Mapping[str, Any] | None, used: Changes) -> bool:
    """Whether the object ``body`` shows the merge patch ``used`` applied to its ``status.used``
    (a key set to None is gone)."""
    status = (body or {}).get("status")
    held = status.get("used") if isinstance(status, Mapping) else None
    held = held if isinstance(held, Mapping) else {}
    return all(
        key not in held if value is None else held.get(key) == value for key, value in used.items()
    )


class QuotaFigures:
    """The route quotas' annotations and ``status.used`` take to the API server, as its CRD has
    shown it: ``first`` is the request a write begins with, ``finish`` sends what its answer
    shows is still missing (nothing, on the common route: the writer's chain to the request stays
    one call of ours long)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        #: Whether the CRD has a status subresource: none until an answer shows one.
        self.through_status = False

    def first(
        self, namespace: str, name: str, annotations: Changes, used: Changes | None
    ) -> tuple[quotas.Request | None, bool]:
        """The request a write of ``annotations`` and ``used`` begins with (None: none, the
        annotations being empty on the status route), and the route it takes."""
        if not self.through_status:
            patch = figures_patch(annotations, used)
            return quotas.quota_patch(self._api, namespace, name, patch), False
        if not annotations:
            return None, True
        patch = figures_patch(annotations, None)
        return quotas.quota_patch(self._api, namespace, name, patch), True

    async def finish(
        self, body: Body, namespace: str, name: str, used: Changes | None, through_status: bool
    ) -> Body:
        """After the first request answered ``body`` (``{}``: none was sent) on the route
        ``through_status``: ``used`` sent where the answer does not hold it yet; the object as
        the last answer gave it."""
        if used is None or (not through_status and holds_used(body, used)):
            return body
        if not through_status:
            self._learn(True, f"a patch of {namespace}/{name} left its status.used as it was")
        try:
            return await self._patch_status(namespace, name, used)
        except ApiException as error:
            if error.status != 404:
                raise
        # No /status: the quota is gone (this patch answers 404 too), or the CRD has none.
        patch = figures_patch(None, used)
        body = await with_retries(*quotas.quota_patch(self._api, namespace, name, patch))
        if holds_used(body, used):
            self._learn(False, f"{namespace}/{name} has no status subresource")
        return body

    async def _patch_status(self, namespace: str, name: str, used: Changes) -> Body:
        status = {"used": dict(used)}
        return await with_retries(*quotas.quota_status_patch(self._api, namespace, name, status))

    def _learn(self, through_status: bool, why: str) -> None:
        if through_status == self.through_status:
            return
        self.through_status = through_status
        route = "through the status subresource" if through_status else "with the object"
        logger.info("ElasticQuota status.used is written %s from now on (%s)", route, why)
