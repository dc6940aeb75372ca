"""ElasticQuotas to models, their labels and annotations: every key, the defaults, and a problem
for every bad value, naming the quota and the annotation."""

from __future__ import annotations

import pytest
from parse_checks import GI, REF, clean_quota, quota_of, quota_raw

from elasticquota.api.parse import parse_quota
from elasticquota.core import keys

# -- ElasticQuota: labels ---------------------------------------------------------------------


@pytest.mark.parametrize("labels", [{}, {keys.LABEL_PARENT: ""}])
def test_a_missing_or_empty_parent_is_the_virtual_root(labels: dict[str, str]) -> None:
    assert clean_quota(quota_raw(labels=labels)).parent == keys.ROOT_QUOTA


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("True", False), ("yes", False), ("1", False), ("", False), (None, False)],
)
def test_is_parent_is_only_the_string_true(value: str | None, expected: bool) -> None:
    labels = {} if value is None else {keys.LABEL_IS_PARENT: value}
    assert clean_quota(quota_raw(labels=labels)).is_parent is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("false", False), ("False", True), ("no", True), ("true", True), ("", True), (None, True)],
)
def test_only_allow_lent_resource_false_disables_lending(value: str | None, expected: bool) -> None:
    labels = {} if value is None else {keys.LABEL_ALLOW_LENT: value}
    assert clean_quota(quota_raw(labels=labels)).allow_lent is expected


def test_tree_labels_are_read() -> None:
    spec = clean_quota(
        quota_raw(
            labels={
                keys.LABEL_TREE_ID: "1234",
                keys.LABEL_IS_ROOT: "true",
                keys.LABEL_IGNORE_DEFAULT_TREE: "true",
            }
        )
    )
    assert (spec.tree_id, spec.is_root, spec.ignore_default_tree) == ("1234", True, True)


def test_tree_labels_default_to_the_default_tree() -> None:
    spec = clean_quota(quota_raw(labels={keys.LABEL_IS_ROOT: "yes"}))
    assert (spec.tree_id, spec.is_root, spec.ignore_default_tree) == ("", False, False)


def test_a_label_value_that_is_not_a_string_is_an_invalid_object() -> None:
    # An unquoted YAML boolean: the API server would refuse it too.
    spec, problems = parse_quota(quota_raw(labels={keys.LABEL_IS_PARENT: True}))
    assert spec is None
    assert problems[0].object == REF
    assert keys.LABEL_IS_PARENT in problems[0].message


def test_creation_timestamp_is_kept() -> None:
    raw = quota_raw(creationTimestamp="2026-01-02T03:04:05Z")
    assert clean_quota(raw).created == "2026-01-02T03:04:05Z"


# -- ElasticQuota: annotations ----------------------------------------------------------------


def test_shared_weight_is_read_as_a_resource_list() -> None:
    raw = quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"2","memory":"1Gi"}'})
    spec = clean_quota(raw)
    assert spec.shared_weight == {"cpu": 2000, "memory": GI}
    assert spec.effective_weight == {"cpu": 2000, "memory": GI}


def test_shared_weight_accepts_numbers() -> None:
    raw = quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":2,"memory":50}'})
    assert clean_quota(raw).shared_weight == {"cpu": 2000, "memory": 50}


def test_no_shared_weight_means_max() -> None:
    spec = clean_quota(quota_raw())
    assert spec.shared_weight is None
    assert spec.effective_weight == spec.max


def test_an_all_zero_shared_weight_means_max_without_a_problem() -> None:
    spec = clean_quota(quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"0"}'}))
    assert spec.effective_weight == spec.max


@pytest.mark.parametrize("text", ['{"cpu":', "[1]", '{"cpu":"heavy"}'])
def test_a_malformed_shared_weight_is_a_problem_and_max_is_used(text: str) -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: text}))
    assert spec.shared_weight is None
    assert spec.effective_weight == spec.max
    assert len(problems) == 1
    assert problems[0].object == REF
    assert problems[0].message.startswith(f"annotation {keys.ANNO_SHARED_WEIGHT}: ")
    assert problems[0].message.endswith("spec.max is used as the shared weight")


def test_a_negative_shared_weight_is_a_problem_and_max_is_used() -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_SHARED_WEIGHT: '{"cpu":"-1"}'}))
    assert spec.shared_weight is None
    assert [p.message for p in problems] == [
        f"annotation {keys.ANNO_SHARED_WEIGHT}: negative weight; spec.max is used"
    ]


def test_namespaces_is_a_json_list_of_names() -> None:
    raw = quota_raw(annotations={keys.ANNO_NAMESPACES: '["a","b"]'})
    assert clean_quota(raw).namespaces == ("a", "b")


@pytest.mark.parametrize("text", ['["a",', '{"a":1}', '["a",1]', '"a"'])
def test_malformed_namespaces_are_a_problem_and_ignored(text: str) -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_NAMESPACES: text}))
    assert spec.namespaces == ()
    assert len(problems) == 1
    assert problems[0].object == REF
    assert problems[0].message.startswith(f"annotation {keys.ANNO_NAMESPACES}: ")
    assert problems[0].message.endswith("; ignored")


@pytest.mark.parametrize("eviction", ["revocation", "preemption"])
def test_a_minimum_runtime_reads_and_a_bad_one_is_a_problem_read_as_absent(eviction: str) -> None:
    annotation, field = f"{keys.EXT_PREFIX}/{eviction}-min-runtime", f"{eviction}_min_runtime"
    assert getattr(clean_quota(quota_raw(annotations={annotation: "1h30m"})), field) == 5400.0
    assert getattr(clean_quota(quota_raw()), field) is None
    spec, problems = quota_of(quota_raw(annotations={annotation: "soon"}))
    assert getattr(spec, field) is None
    assert [problem.message for problem in problems] == [
        f"annotation {annotation}: 'soon': expected seconds (600) or a "
        "duration of hours, minutes and seconds (10m, 1h30m); the parent's or the operator's "
        "minimum runtime is used"
    ]


def test_total_resource_is_read() -> None:
    raw = quota_raw(annotations={keys.ANNO_TOTAL_RESOURCE: '{"cpu":"64","memory":"256Gi"}'})
    assert clean_quota(raw).total_resource == {"cpu": 64_000, "memory": 256 * GI}


def test_a_malformed_total_resource_is_a_problem_and_the_total_is_empty() -> None:
    spec, problems = quota_of(quota_raw(annotations={keys.ANNO_TOTAL_RESOURCE: "{cpu: 64}"}))
    assert spec.total_resource is None
    assert len(problems) == 1
    assert problems[0].message.startswith(f"annotation {keys.ANNO_TOTAL_RESOURCE}: malformed JSON")
    assert problems[0].message.endswith("the tree's total is taken as empty")


@pytest.mark.parametrize("key", [keys.ANNO_LENDING_LIMIT, keys.ANNO_BORROWING_LIMIT])
def test_lending_and_borrowing_limits_are_read(key: str) -> None:
    spec = clean_quota(quota_raw(annotations={key: '{"cpu":"2"}'}))
    limit = spec.lending_limit if key == keys.ANNO_LENDING_LIMIT else spec.borrowing_limit
    assert limit == {"cpu": 2000}


@pytest.mark.parametrize("key", [keys.ANNO_LENDING_LIMIT, keys.ANNO_BORROWING_LIMIT])
@pytest.mark.parametrize("text", ["{", '{"cpu":"x"}', '{"cpu":"-1"}'])
def test_bad_lending_and_borrowing_limits_are_problems_and_ignored(key: str, text: str) -> None:
    spec, problems = quota_of(quota_raw(annotations={key: text}))
    assert (spec.lending_limit, spec.borrowing_limit) == (None, None)
    assert len(problems) == 1
    assert problems[0].object == REF
    assert problems[0].message.startswith(f"annotation {key}: ")
    assert problems[0].message.endswith("ignored")
