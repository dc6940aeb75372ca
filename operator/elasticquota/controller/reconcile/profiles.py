"""The ElasticQuotaProfile controller: each profile's root quota follows its node pool.

Reacts to profile, node and root-quota changes (debounced) instead of polling every 10 s as the
reference does. For each profile it computes the root quota the reference's controller would write
(``core.tree.profiles.root_quota_manifest``) and creates it, or merge-patches what differs: the
labels and annotations the controller owns and the spec. A profile without a ``tree-id`` label gets
it written back. Of profiles naming the same quota the first by namespace/name writes it, as in
``plan``; the others are ignored, with a Warning Event each (each writing its own root over the
other's, as the reference does, rewrote the quota at every pass, for ever), and so is a profile
that names a reserved quota. Only the active replica
writes (and nothing in a dry run, whose ``Cluster`` sends nothing).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from elasticquota.controller.context import LoopContext, WritingLoop
from elasticquota.core import keys
from elasticquota.core.model.models import Problem, ProfileSpec
from elasticquota.core.model.quota import Quota
from elasticquota.core.quantities.quantity import QuantityError
from elasticquota.core.quantities.resources import parse_resource_list
from elasticquota.core.tree.profiles import profile_tree_id, root_owners, root_quota_manifest
from elasticquota.kube.outages import OutageLog

logger = logging.getLogger(__name__)

#: The Event reasons: a root quota's write failed; a profile ignored (another writes its quota).
FAILED_REASON = "UpdateQuotaFailed"
IGNORED_REASON = "ProfileIgnored"
#: Annotations the profile controller owns on a root quota.
OWNED_ANNOTATIONS = (keys.ANNO_TOTAL_RESOURCE, keys.ANNO_UNSCHEDULABLE_RESOURCE)


def _same_quantities(left: Any, right: Any) -> bool:
    try:
        return parse_resource_list(left or {}) == parse_resource_list(right or {})
    except QuantityError:
        return False


def _keys(resources: Any) -> set[str]:
    return set(resources) if isinstance(resources, dict) else set()


def root_quota_patch(desired: dict[str, Any], current: Quota) -> dict[str, Any] | None:
    """The merge patch that makes ``current`` match ``desired`` where the controller owns it."""
    metadata = desired["metadata"]
    labels = {
        key: value for key, value in metadata["labels"].items() if current.labels.get(key) != value
    }
    annotations = {
        key: metadata["annotations"][key]
        for key in OWNED_ANNOTATIONS
        if current.annotations.get(key) != metadata["annotations"][key]
    }
    patch: dict[str, Any] = {}
    if labels or annotations:
        patch["metadata"] = {"labels": labels, "annotations": annotations}
    spec = desired["spec"]
    if not all(_same_quantities(spec[k], current.spec.get(k)) for k in ("min", "max")):
        # A merge patch merges maps: keys the desired spec dropped are deleted with null.
        patch["spec"] = {
            k: {**dict.fromkeys(_keys(current.spec.get(k)) - set(spec[k])), **spec[k]}
            for k in ("min", "max")
        }
    return patch or None


class ProfileController(WritingLoop):
    """Keeps every profile's root quota in line with its node pool."""

    def __init__(self, context: LoopContext) -> None:
        super().__init__(context)
        self._outage = OutageLog(logger, "profile root quota updates")
        #: The ignored profiles reported, by ref: the message reported.
        self._ignored: dict[str, str] = {}

    async def run(self) -> None:
        await self._state.synced.wait()
        while True:
            await self._state.profiles_changed.wait()
            await asyncio.sleep(self._settings.profile_debounce)
            await self._leading.wait()
            self._state.profiles_changed.clear()
            await self._pass()

    async def _pass(self) -> None:
        """Each profile that writes its root quota (``root_owners``), as memory holds it when
        its turn comes; the others reported."""
        owners, ignored = root_owners(self._state.profiles.values())
        await self._report_ignored(ignored)
        for owner in owners:
            profile = self._state.profiles.get((owner.namespace, owner.name))
            if profile is not None:  # None: deleted while an earlier one was written
                await self._reconcile(profile)
            await asyncio.sleep(0)  # a root sums every node: the loop is held one at a time

    async def _report_ignored(self, ignored: list[tuple[ProfileSpec, Problem]]) -> None:
        """A profile ignored (``root_owners``: another writes its quota, or it names a reserved
        one): logged and a Warning Event ``ProfileIgnored`` on it, once while it stands (again if
        it comes back)."""
        standing: dict[str, str] = {}
        for profile, problem in ignored:
            standing[problem.object] = problem.message
            if self._ignored.get(problem.object) != problem.message:
                logger.warning("%s: %s", problem.object, problem.message)
                await self._post(profile, IGNORED_REASON, problem.message)
        self._ignored = standing

    async def _reconcile(self, profile: ProfileSpec) -> None:
        current = self._state.quotas.get((profile.namespace, profile.quota_name))
        desired = root_quota_manifest(
            profile,
            self._state.engine.nodes.values(),
            current.as_manifest() if current else None,
        )
        try:
            await self._write_root(profile, desired, current)
            await self._label_profile(profile)
        except Exception as error:
            self._outage.failed(f"profile {profile.ref}", error)
            await self._post(profile, FAILED_REASON, str(error))
            self._state.profiles_changed.set()  # try again after the debounce
            return
        self._outage.succeeded()

    async def _write_root(
        self, profile: ProfileSpec, desired: dict[str, Any], current: Quota | None
    ) -> None:
        if current is None:
            created = await self._cluster.create_quota(desired)
            if created is not None:
                logger.info("profile %s: created root quota %s", profile.ref, profile.quota_name)
                self._state.keep_created(created)
            return
        patch = root_quota_patch(desired, current)
        if patch is not None:
            body = await self._cluster.patch_quota(profile.namespace, profile.quota_name, patch)
            self._state.keep_written(body, inputs=True)  # None: not sent (a dry run)

    async def _label_profile(self, profile: ProfileSpec) -> None:
        """Write the computed tree id back onto the profile, as the reference does."""
        labels = self._state.profile_labels.get((profile.namespace, profile.name), {})
        if labels.get(keys.LABEL_TREE_ID):
            return
        patch = {"metadata": {"labels": {keys.LABEL_TREE_ID: profile_tree_id(profile)}}}
        body = await self._cluster.patch_profile(profile.namespace, profile.name, patch)
        self._state.keep_written_profile(body)  # None: not sent (a dry run)

    async def _post(self, profile: ProfileSpec, reason: str, message: str) -> None:
        involved = {
            "apiVersion": f"{keys.PROFILE_GROUP}/v1alpha1",
            "kind": keys.PROFILE_KIND,
            "namespace": profile.namespace,
            "name": profile.name,
        }
        if profile.uid:
            involved["uid"] = profile.uid  # else ``kubectl describe`` does not list the Event
        try:
            await self._cluster.post_event(involved, reason, message)
        except Exception as error:
            self._outage.failed(f"an Event on {profile.ref}", error)
