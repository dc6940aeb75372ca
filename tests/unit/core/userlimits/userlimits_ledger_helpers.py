"""Limit books, pods and admission steps for the ``test_userlimits_ledger_*`` modules.

cpu is in millicores, memory in bytes (engine units). Paths run from the pod's quota to the root.
"""

from __future__ import annotations

import itertools

from elasticquota.core.userlimits import (
    LimitBook,
    LimitedPod,
    QuotaLimitSource,
    UserLimitLedger,
    build_book,
)

MI = 1024**2
_names = itertools.count()


def book_of(tree: dict[str, tuple[str | None, str]]) -> LimitBook:
    book, problems = build_book(
        QuotaLimitSource(name, parent, text) for name, (parent, text) in tree.items()
    )
    assert problems == []
    return book


def pod(
    path: tuple[str, ...],
    user: str = "sue",
    app: str = "",
    groups: tuple[str, ...] = (),
    **request: int,
) -> LimitedPod:
    return LimitedPod(f"ns/p{next(_names)}", path, user, groups, app, request)


def refused_on(ledger: UserLimitLedger, candidate: LimitedPod) -> list[tuple[str, str, str, str]]:
    return [(r.kind, r.name, r.quota, r.resource) for r in ledger.check(candidate).refusals]


def start(ledger: UserLimitLedger, candidate: LimitedPod) -> LimitedPod:
    assert ledger.check(candidate).allowed, ledger.check(candidate).reason
    ledger.add(candidate)
    return candidate
