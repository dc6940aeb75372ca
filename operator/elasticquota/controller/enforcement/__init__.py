"""What the active replica does to pods so that quotas hold: revocation and admission gating.

From the bottom up (import contract "Enforcement"):

- ``evictions``: what both evict with: one rate limiter, evictions counted by quota, reason and
  outcome, the pod named in their Events;
- ``rounds``: a revocation round carried out: its victims evicted in turn (rate-limited), each
  while the quota still needs it gone, with their Events;
- ``preemption``: in-quota preemption, lower-priority pods evicted for a gated pod that would
  fit (its evictions share revocation's rate limiter);
- ``revocation``: a quota that stays above its runtime gives back its least important pods
  (the over-use timer kept on the quota; its rounds by ``rounds``);
- ``gating``: gated pods released when they fit their quota, in priority order (their
  preemptions by ``preemption``).

``gating`` and ``revocation`` are independent of each other.

The webhooks' refusal of pods over a user limit, on API servers without gates, is
``controller.webhooks.userlimit_admission``.
"""
