"""The fast Pod reader against the validated path on generated bodies: any body, well-formed or
broken, gets the validated answer, and the well-formed ones are really read fast."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from podfast_checks import Raw, assert_fast, assert_same_both_ways

from elasticquota.core import keys

# -- generated bodies -------------------------------------------------------------------------

RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "pods"]
NUMBERS = ["0", "1", "3", "100", "250", "0.5", ".5", "5.", "1.25", "+2", "-1", "-0.5", "0.1"]
SUFFIXES = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u"]
#: Valid, in the less usual notations: exponents, huge, tiny (raised to one nano), spaces.
ODD_QUANTITIES = [
    "1e3",
    "1E-3",
    "2.5e2",
    "1e+3",
    "1e999999999",
    "-1e-999999999",
    "9223372036854775808",
    "123456789012345678901234567890Ei",
    "0.0000000001",
    " 2Gi\n",
    "1E",
]
BAD_QUANTITIES = ["", " ", "abc", "1.5.5", "1e", "Mi", "1mi", "1 Gi", "١", "9" * 1001]
WRONG = st.sampled_from([None, "x", 1, 1.5, True, [], {}, ["a"], {"a": 1}, {1: "a"}, "a\ud800"])
TEXT = st.one_of(st.sampled_from(["a", "é", "Z", "", "a\ud800"]), st.text(max_size=6))
#: Keys JSON never makes but YAML does (``1: x``), or that are not ASCII.
ODD_KEYS = st.one_of(st.integers(0, 3), st.none(), TEXT)
TIMESTAMPS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "2026-11-20T08:00:00Z",
            "2026-11-20T08:00:00.123456Z",
            "2026-11-20T09:00:00+01:00",
            "2026-11-20T08:00:00",
            "",
            "yesterday",
            "2026-13-40T99:00:00Z",
        ]
    ),
)


def now_and_then(
    common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], one_in: int = 8
) -> st.SearchStrategy[Any]:
    """Mostly ``common``, about once in ``one_in`` draws ``rare``."""
    return st.integers(0, one_in - 1).flatmap(lambda roll: rare if roll == 0 else common)


def mostly(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The strategy, or now and then a value of the wrong type (null included)."""
    return now_and_then(strategy, WRONG, one_in=16)


def python_name_now_and_then(
    strategy: st.SearchStrategy[Any], name: str, value: Any
) -> st.SearchStrategy[Any]:
    """The object, now and then also with a field given by its Python name."""
    return st.tuples(strategy, st.integers(0, 9)).map(
        lambda pair: (
            {**pair[0], name: value} if pair[1] == 0 and isinstance(pair[0], dict) else pair[0]
        )
    )


valid_quantities = st.one_of(
    st.builds(
        lambda number, suffix: number + suffix, st.sampled_from(NUMBERS), st.sampled_from(SUFFIXES)
    ),
    st.sampled_from(ODD_QUANTITIES),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
quantities = now_and_then(
    valid_quantities,
    st.one_of(st.sampled_from(BAD_QUANTITIES), st.floats(), WRONG),
    one_in=20,
)
resource_lists = st.dictionaries(
    now_and_then(st.sampled_from(RESOURCES), ODD_KEYS, one_in=30), quantities, max_size=3
)
resources = st.fixed_dictionaries(
    {}, optional={"requests": mostly(resource_lists), "limits": mostly(resource_lists)}
)
containers = python_name_now_and_then(
    st.fixed_dictionaries(
        {},
        optional={
            "name": mostly(st.sampled_from(["main", "proxy", "", "é"])),
            "image": st.just("app:1"),
            "resources": mostly(resources),
            "restartPolicy": mostly(st.sampled_from(["Always", "OnFailure", "Never"])),
        },
    ),
    "restart_policy",
    "Always",
)
gates = st.lists(
    mostly(
        st.dictionaries(
            now_and_then(st.just("name"), ODD_KEYS), mostly(st.sampled_from(["q", ""])), max_size=1
        )
    ),
    max_size=2,
)
specs = python_name_now_and_then(
    st.fixed_dictionaries(
        {},
        optional={
            "containers": mostly(st.lists(mostly(containers), max_size=4)),
            "initContainers": mostly(st.lists(mostly(containers), max_size=3)),
            "overhead": mostly(resource_lists),
            "nodeName": mostly(st.sampled_from(["node-1", ""])),
            "priority": mostly(st.one_of(st.none(), st.integers(-(2**40), 2**70))),
            "schedulingGates": mostly(gates),
            "preemptionPolicy": mostly(st.sampled_from(["Never", "PreemptLowerPriority"])),
            "priorityClassName": st.just("high"),
        },
    ),
    "node_name",
    "python-name",
)
label_values = now_and_then(st.sampled_from(["team", "", "false", "true", "False"]), TEXT)
labels = st.dictionaries(
    now_and_then(
        st.sampled_from([*keys.POD_LABEL_QUOTA_ALIASES, keys.POD_LABEL_PREEMPTIBLE, "app"]),
        ODD_KEYS,
    ),
    mostly(label_values),
    max_size=4,
)
metas = python_name_now_and_then(
    st.fixed_dictionaries(
        {"name": mostly(now_and_then(st.sampled_from(["p", "web-7d9f8c6b5-x2k4p"]), st.just("")))},
        optional={
            "namespace": mostly(st.sampled_from(["ns", ""])),
            "labels": mostly(labels),
            "annotations": mostly(st.dictionaries(TEXT, mostly(TEXT), max_size=3)),
            "creationTimestamp": mostly(TIMESTAMPS),
            "deletionTimestamp": mostly(TIMESTAMPS),
        },
    ),
    "creation_timestamp",
    "2026-11-20T07:00:00Z",
)
statuses = python_name_now_and_then(
    st.fixed_dictionaries(
        {},
        optional={
            "phase": mostly(st.sampled_from(["Pending", "Running", "Succeeded", "Failed"])),
            "startTime": mostly(TIMESTAMPS),
        },
    ),
    "start_time",
    "2026-11-20T08:00:00Z",
)
bodies = st.fixed_dictionaries(
    {"metadata": mostly(metas)},
    optional={"apiVersion": st.just("v1"), "spec": mostly(specs), "status": mostly(statuses)},
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies)
def test_generated_bodies_are_read_the_same_both_ways(raw: Raw) -> None:
    assert_same_both_ways(raw)


# Well-formed bodies only: each one must take the fast path.
good_lists = st.dictionaries(st.sampled_from(RESOURCES), valid_quantities, max_size=3)
good_containers = st.fixed_dictionaries(
    {"name": st.sampled_from(["main", "proxy", ""])},
    optional={
        "resources": st.fixed_dictionaries(
            {}, optional={"requests": good_lists, "limits": good_lists}
        ),
        "restartPolicy": st.sampled_from(["Always", "OnFailure"]),
    },
)
good_bodies = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {"name": st.just("p")},
            optional={
                "namespace": st.just("ns"),
                "labels": st.dictionaries(
                    st.sampled_from([*keys.POD_LABEL_QUOTA_ALIASES, keys.POD_LABEL_PREEMPTIBLE]),
                    st.sampled_from(["team", "", "false"]),
                ),
                "deletionTimestamp": TIMESTAMPS,
            },
        ),
    },
    optional={
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "containers": st.lists(good_containers, max_size=4),
                "initContainers": st.lists(good_containers, max_size=3),
                "overhead": good_lists,
                "priority": st.one_of(st.none(), st.integers(-(2**40), 2**40)),
                "schedulingGates": st.lists(st.fixed_dictionaries({"name": st.just("q")})),
            },
        ),
        "status": st.fixed_dictionaries(
            {}, optional={"phase": st.just("Running"), "startTime": TIMESTAMPS}
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(good_bodies)
def test_well_formed_generated_bodies_are_read_fast_and_the_same(raw: Raw) -> None:
    assert_fast(raw)
