"""core.decisions.diff for quotas left out of their tree: the marker, what is removed, the way back.

Rules: a quota object left out (a problem with ``left_out``) gets ``elasticquota.dev/invalid``
naming every problem found on it (without "the quota is left out of its tree"); the annotations
computed from its tree (Koordinator's status-worker keys and the revocation timer's) and
``status.used`` are removed; annotations the operator does not own stay; an object already marked
needs no write. Once valid again, ``quota_write`` writes its figures and removes the marker.
"""

from __future__ import annotations

from typing import Any

from diff_objects import apply, result, written

from elasticquota.core import keys
from elasticquota.core.decisions.diff import (
    CLEARED_WHEN_INVALID,
    INVALID_LIMIT,
    invalid_quotas,
    invalid_write,
    quota_write,
)
from elasticquota.core.decisions.overuse import ANNO_OVER_USED_SINCE
from elasticquota.core.model.models import Problem

MIN_ABOVE_MAX = "spec.min.cpu (8) is greater than spec.max.cpu (4)"


def problems_of_a_broken_quota() -> list[Problem]:
    """As ``api.parse`` reports min > max: the rule, then that the quota is left out."""
    return [
        Problem("ElasticQuota team/bad", MIN_ABOVE_MAX),
        Problem("ElasticQuota team/bad", "the quota is left out of its tree", left_out=True),
    ]


def test_a_quota_left_out_is_named_with_its_rules() -> None:
    problems = [
        *problems_of_a_broken_quota(),
        Problem(
            "ElasticQuota other/orphan",
            "parent quota 'gone' does not exist; the quota is left out of its tree",
            left_out=True,
        ),
    ]
    assert invalid_quotas(problems) == {
        ("team", "bad"): MIN_ABOVE_MAX,
        ("other", "orphan"): "parent quota 'gone' does not exist",
    }


def test_notes_alone_do_not_make_a_quota_invalid_nor_do_other_kinds() -> None:
    problems = [
        Problem("ElasticQuota team/a", "annotation x: malformed JSON; ignored"),
        Problem("Pod team/p", "invalid object: spec", left_out=True),
        Problem("Node /n1", "invalid object: status", left_out=True),
    ]
    assert invalid_quotas(problems) == {}


def test_the_reason_is_bounded() -> None:
    problems = [
        Problem("ElasticQuota team/bad", "x" * 5000),
        Problem("ElasticQuota team/bad", "the quota is left out of its tree", left_out=True),
    ]
    assert len(invalid_quotas(problems)[("team", "bad")]) == INVALID_LIMIT


def test_a_quota_that_becomes_invalid_loses_its_figures_and_gets_the_marker() -> None:
    annotations, status = written(result("bad"))
    annotations[ANNO_OVER_USED_SINCE] = "2024-01-01T00:00:00.000000Z"
    annotations[keys.ANNO_GUARANTEED] = '{"cpu":"1"}'  # Koordinator's, were it ever written
    annotations[keys.ANNO_SHARED_WEIGHT] = '{"cpu":"4"}'  # the user's: stays
    annotations["team.example/owner"] = "alice"

    change = invalid_write("team", "bad", MIN_ABOVE_MAX, annotations, status)
    after, after_status = apply(change, annotations, status)

    assert after == {
        keys.ANNO_INVALID: MIN_ABOVE_MAX,
        keys.ANNO_SHARED_WEIGHT: '{"cpu":"4"}',
        "team.example/owner": "alice",
    }
    assert after_status == {"used": {}}
    assert not set(after) & set(CLEARED_WHEN_INVALID)
    # written once: the marked object needs nothing more
    assert invalid_write("team", "bad", MIN_ABOVE_MAX, after, after_status).empty


def test_a_new_reason_replaces_the_old_one_only() -> None:
    annotations = {keys.ANNO_INVALID: MIN_ABOVE_MAX}
    reason = "spec.max has negative values: cpu -1"
    change = invalid_write("team", "bad", reason, annotations, {})
    assert change.annotations == {keys.ANNO_INVALID: reason}
    assert change.used is None


def test_a_quota_valid_again_gets_its_figures_back_and_loses_the_marker() -> None:
    res = result("bad")
    marked: dict[str, str] = {keys.ANNO_INVALID: MIN_ABOVE_MAX}
    status: dict[str, Any] = {"used": {}}

    change = quota_write(res, marked, status)
    after, after_status = apply(change, marked, status)

    assert (after, after_status) == written(res)
    assert quota_write(res, after, after_status).empty


def test_a_valid_quota_never_written_as_invalid_is_diffed_as_before() -> None:
    annotations, status = written(result())
    assert keys.ANNO_INVALID not in quota_write(result(), annotations, status).annotations
