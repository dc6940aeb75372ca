"""The user limits settings: whom a pod counts for, and what happens to a pod over its limit.

A quota's ``elasticquota.dev/user-limits`` annotation limits what each user or group may use in it.
These settings say whose stamped identity (``elasticquota.dev/user-info``) is believed, which user
a pod without an identity counts for, and whether the validating pod webhook refuses a pod over its
limit where gating does not hold it back.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from elasticquota.core.userlimits.stamping import DEFAULT_TRUSTED_USERS
from elasticquota.settings.values import MAX_NAME, USER_NAME, IdentityPattern


class UserLimitSettings(BaseModel):
    """Identities of pods and the enforcement of user and group limits."""

    user_limits_refuse_pods: bool = False
    """Where gating does not hold pods back (API servers without scheduling gates, < 1.27; or
    ``gating`` off) the validating pod webhook refuses a new pod that would break its user or
    group limit (quota annotation ``elasticquota.dev/user-limits``) instead of letting it in
    unchecked. Off by default; without effect where gating runs."""

    trusted_identity_users: list[IdentityPattern] = Field(
        default_factory=lambda: list(DEFAULT_TRUSTED_USERS)
    )
    """Requesters (user names; ``*`` matches any text) whose pods and workloads keep the
    ``elasticquota.dev/user-info`` identity they carry: the controllers that create pods from
    templates, and external identity providers. Anyone else's pods and workloads get the
    requester's own identity (user and group limits count it)."""

    trusted_identity_groups: list[IdentityPattern] = Field(default_factory=list)
    """The same by group: members of these groups may hand pods another identity."""

    default_user: str = Field(
        default="nobody", min_length=1, max_length=MAX_NAME, pattern=USER_NAME
    )
    """The user a pod without the ``elasticquota.dev/user-info`` identity counts for in user
    limits (YuniKorn's anonymous user): a limit naming this user, or the ``*`` user limit, applies
    to its pods."""
