"""What the active replica does to pods so that quotas hold: revocation and admission gating.

From the bottom up (import contract "Enforcement"):

- ``evictions``: what both evict with: one rate limiter, evictions counted by quota, reason and
  outcome, the pod named in their Events;
- ``revocation``: a quota that stays above its runtime gives back its least important pods
  (evictions, rate-limited; the over-use timer kept on the quota);
- ``gating``: gated pods released when they fit their quota, in priority order, and in-quota
  preemption for the ones that would fit (its evictions share revocation's rate limiter).

``gating`` and ``revocation`` are independent of each other.

The webhooks' refusal of pods over a user limit, on API servers without gates, is
``controller.webhooks.userlimit_admission``.
"""
