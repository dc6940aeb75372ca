"""Who a new pod runs for, decided at admission: the mutating webhook's rule, without Kubernetes.

User and group limits are only as good as the identity they count, and a pod's identity is an
annotation anyone who can create the pod can write. So the pod webhook decides it (YuniKorn's
admission controller does the same, ``usergroup_resolution.md``):

* A pod created by a **trusted** requester keeps the ``user-info`` annotation it carries (our key
  or YuniKorn's alias). Trusted are the controllers that create pods from templates (by default
  the service accounts of kube-system, where the kube-controller-manager's controllers run with
  ``--use-service-account-credentials``, and ``system:kube-controller-manager`` itself when they
  run without) and the users or groups configured as external identity providers (a CI system
  that creates pods for its own users, say).
* Any other requester's pod gets the requester's own identity, from the admission request's
  ``userInfo``: a hand-written value is replaced, so nobody can run as somebody else.
* A workload (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob) gets its creator's
  identity in its pod template's annotations when it is created, by the same rule: the pods its
  controller makes later (trusted) carry the creator's identity.
* On an update by an untrusted requester, a changed identity of a pod or of a workload's template
  is put back as it was (the pod or workload keeps counting for whoever it counted for; an update
  that leaves the annotation alone changes nothing): without this, anyone allowed to update a pod
  could move it to another user's limits with ``kubectl annotate --overwrite``.

The decision is a ``Stamp``: the annotations to set at a path of the object (the pod's metadata,
or the template's), or nothing to change. The webhook turns it into a JSON patch.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from elasticquota.core.keys import ANNO_USER_INFO, ANNO_USER_INFO_ALIASES
from elasticquota.core.userlimits.identity import Identity, parse_user_info

#: Requesters trusted by default: the kube-controller-manager's controllers, with and without
#: service-account credentials (``*`` matches any text, as in YuniKorn's ``systemUsers``).
DEFAULT_TRUSTED_USERS: Final = (
    "system:serviceaccount:kube-system:*",
    "system:kube-controller-manager",
)

#: Where each workload kind keeps the template of the pods its controller creates.
TEMPLATE_PATHS: Final[Mapping[str, tuple[str, ...]]] = {
    "Deployment": ("spec", "template", "metadata"),
    "ReplicaSet": ("spec", "template", "metadata"),
    "StatefulSet": ("spec", "template", "metadata"),
    "DaemonSet": ("spec", "template", "metadata"),
    "Job": ("spec", "template", "metadata"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "metadata"),
}
POD_PATH: Final = ("metadata",)


@dataclass(frozen=True, slots=True)
class TrustRules:
    """Who may hand a pod or a template an identity other than their own: user names and group
    names, each a pattern where ``*`` matches any text."""

    users: tuple[str, ...] = DEFAULT_TRUSTED_USERS
    groups: tuple[str, ...] = ()

    def trusts(self, requester: Identity) -> bool:
        """The requester is a trusted controller or a configured external user or group."""
        if any(fnmatch.fnmatchcase(requester.user, pattern) for pattern in self.users):
            return True
        return any(
            fnmatch.fnmatchcase(group, pattern)
            for group in requester.groups
            for pattern in self.groups
        )


@dataclass(frozen=True, slots=True)
class Stamp:
    """Set ``annotations`` in the mapping at ``path`` (``("metadata",)`` for a pod: its
    ``metadata.annotations``), creating what is missing, removing those set to None; ``reason``
    says why, for the log."""

    path: tuple[str, ...]
    annotations: Mapping[str, str | None]
    reason: str


def stamp_identity(
    kind: str,
    operation: str,
    body: Mapping[str, Any],
    old_body: Mapping[str, Any] | None,
    requester: Identity | None,
    rules: TrustRules,
) -> Stamp | None:
    """The identity annotations an admission request's object must get, or None to leave it.

    ``kind`` is the object's kind (``Pod`` or a workload of ``TEMPLATE_PATHS``), ``operation``
    the request's (``CREATE``, ``UPDATE``), ``requester`` the identity of its ``userInfo`` (None
    when it names nobody: nothing is decided for it)."""
    path = POD_PATH if kind == "Pod" else TEMPLATE_PATHS.get(kind)
    if path is None or requester is None:
        return None
    if operation == "CREATE":
        return _on_create(path, _annotations(body, path), requester, rules)
    if operation == "UPDATE" and old_body is not None:
        return _on_update(
            path, _annotations(body, path), _annotations(old_body, path), rules, requester
        )
    return None


def _on_create(
    path: tuple[str, ...], annotations: Mapping[str, str], requester: Identity, rules: TrustRules
) -> Stamp | None:
    """A trusted requester's valid identity stays; any other object gets the requester's."""
    claimed = _claimed(annotations)
    if claimed is not None and rules.trusts(requester):
        return None
    own = requester.annotation()
    if annotations.get(ANNO_USER_INFO) == own:
        return None
    reason = (
        f"replaced the identity claimed by {requester.user}, who is not trusted to set one"
        if claimed is not None
        else f"created by {requester.user}"
    )
    return Stamp(path, {ANNO_USER_INFO: own}, reason)


def _on_update(
    path: tuple[str, ...],
    annotations: Mapping[str, str],
    before: Mapping[str, str],
    rules: TrustRules,
    requester: Identity,
) -> Stamp | None:
    """An untrusted change of a pod's or a workload template's identity is put back as it was."""
    changed = [key for key in ANNO_USER_INFO_ALIASES if annotations.get(key) != before.get(key)]
    if not changed or rules.trusts(requester):
        return None
    restored: dict[str, str | None]
    if any(key in before for key in ANNO_USER_INFO_ALIASES):
        # It had an identity: every changed key as it was, one that was not there removed.
        restored = {key: before.get(key) for key in changed}
    else:  # none was: the requester's own, under our key (read before any alias added)
        restored = {ANNO_USER_INFO: requester.annotation()}
    owner = "pod" if path == POD_PATH else "workload"
    return Stamp(path, restored, f"{requester.user} may not change the {owner}'s identity")


def _claimed(annotations: Mapping[str, str]) -> Identity | None:
    """The valid identity the object's annotations claim (the first key present), if any."""
    for key in ANNO_USER_INFO_ALIASES:
        text = annotations.get(key)
        if text is not None:
            try:
                return parse_user_info(text)
            except ValueError:
                return None
    return None


def _annotations(body: Mapping[str, Any], path: Sequence[str]) -> Mapping[str, str]:
    node: Any = body
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    annotations = node.get("annotations") if isinstance(node, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}
