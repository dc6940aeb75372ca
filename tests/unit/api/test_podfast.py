"""The fast Pod reader against the validated path: the same ``(PodInfo, problems)`` for every
body, well-formed or broken, and the fast reader really takes the common shapes."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_objects import raw_pod

from elasticquota.api.parse import Parsed, parse_pod, parse_pod_validated
from elasticquota.api.podfast import read_pod
from elasticquota.core import keys

Raw = dict[str, Any]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "pods.yaml"
QUOTA_ALIAS = keys.POD_LABEL_QUOTA_ALIASES[1]


def outcome(parser: Callable[[Any], Parsed], raw: Any) -> Parsed | tuple[type, str]:
    """What ``parser`` returns, or the type and text of what it raises (a body that is not a
    mapping at all breaks the validated path too)."""
    try:
        return parser(raw)
    except Exception as error:  # the error itself is the result compared
        return type(error), str(error)


def assert_same_both_ways(raw: Any) -> None:
    """``parse_pod`` (fast reader first) gives what the validated path gives, to the types and
    the order of the requests, and neither changes the body."""
    before = copy.deepcopy(raw)
    expected = outcome(parse_pod_validated, raw)
    result = outcome(parse_pod, raw)
    assert result == expected
    # Equal is not enough: True == 1, and the requests' order is part of the answer too.
    assert repr(result) == repr(expected)
    assert raw == before


def assert_fast(raw: Raw) -> None:
    """The fast reader takes the body, and agrees with the validated path."""
    assert read_pod(raw) is not None
    assert_same_both_ways(raw)


# -- the repository's pods --------------------------------------------------------------------


def example_pods() -> list[Raw]:
    documents = yaml.safe_load_all(EXAMPLES.read_text())
    return [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") == "Pod"]


def test_the_examples_have_pods() -> None:
    assert len(example_pods()) >= 10


@pytest.mark.parametrize("raw", example_pods(), ids=lambda raw: raw["metadata"]["name"])
def test_every_example_pod_is_read_fast_and_the_same(raw: Raw) -> None:
    assert_fast(raw)
    assert_fast(json.loads(json.dumps(raw)))


def container(name: str, restart_policy: str | None = None, **requests: str) -> Raw:
    """As the engine tests build containers (``test_engine_pods``)."""
    result: Raw = {"name": name, "resources": {"requests": requests}}
    if restart_policy:
        result["restartPolicy"] = restart_policy
    return result


def pod(
    spec: Raw | None = None, labels: dict[Any, Any] | None = None, status: Raw | None = None
) -> Raw:
    return raw_pod(labels=labels, spec=spec, status=status)


def pod_with(*containers: Raw, **spec: Any) -> Raw:
    """As ``test_podrequest.pod_with`` builds pods: no labels, no status."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": list(containers), **spec},
    }


WELL_FORMED = [
    pod(),
    pod(labels={keys.POD_LABEL_QUOTA: "new", QUOTA_ALIAS: "old"}),
    pod(labels={QUOTA_ALIAS: "team", keys.POD_LABEL_PREEMPTIBLE: "false"}),
    pod(labels={keys.POD_LABEL_PREEMPTIBLE: "False"}),
    pod(
        spec={"priority": 100, "nodeName": "node-1", "preemptionPolicy": "Never"},
        status={"phase": "Running", "startTime": "2026-11-20T08:00:00Z"},
    ),
    pod(status={"startTime": "2026-11-20T09:00:00+01:00"}),
    pod(status={"startTime": "2026-11-20T08:00:00"}),
    pod(status={"startTime": "yesterday"}),
    pod(spec={"nodeName": "node-1"}, status={"phase": "Succeeded"}),
    pod(spec={"schedulingGates": [{"name": "quota"}, {"name": ""}, {}]}),
    pod(spec={"priority": None, "preemptionPolicy": None}),
    {
        "metadata": {
            "name": "p",
            "namespace": "team",
            "deletionTimestamp": "2026-11-20T08:00:30Z",
            "creationTimestamp": "2026-11-20T07:00:00Z",
            "annotations": {"note": "héllo", "kubectl.kubernetes.io/restartedAt": "x"},
        },
        "spec": {
            "nodeName": "n",
            "containers": [
                container("a", cpu="100m", memory="1Gi"),
                container("b", cpu="200m", memory="1Gi"),
            ],
            "initContainers": [
                container("init-1", cpu="500m", memory="1Gi"),
                container("init-2", cpu="250m", memory="512Mi"),
            ],
            "overhead": {"cpu": "50m"},
        },
        "status": {"phase": "Running"},
    },
    pod_with(container("app", cpu="300m"), initContainers=[container("proxy", "Always", cpu="1")]),
    pod_with({"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}),
    pod_with({"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}}}),
    pod_with(
        {"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4", "memory": 2}}}
    ),
    pod_with(
        container("c", cpu="1"),
        initContainers=[
            container("proxy", "Always", cpu="1"),
            container("migrate", cpu="1500m"),
            container("sidecar-2", "Always", cpu="250m", memory="1Gi"),
            {"name": "i", "resources": {"limits": {"cpu": "3"}}},
        ],
        overhead={"cpu": "100m", "memory": "120Mi"},
    ),
    pod_with(*[container(f"c{i}", cpu="0.1m") for i in range(10)]),
    pod_with(*[container(f"c{i}", memory="0.5") for i in range(3)]),
    pod_with(container("c", cpu="-1", memory="-0.5")),
    pod_with(container("c", cpu="-2"), initContainers=[container("proxy", "Always", cpu="1")]),
    pod_with(container("c", cpu="1e3", memory="1e999999999", storage="1n")),
    pod_with({"name": "c", "resources": {"requests": {"cpu": 2, "memory": 0.5}}}),
    pod_with(),
]


@pytest.mark.parametrize("raw", WELL_FORMED)
def test_the_shapes_the_tests_build_are_read_fast_and_the_same(raw: Raw) -> None:
    assert_fast(raw)


BROKEN: list[Any] = [
    pod(spec={"priority": "high"}),
    pod(spec={"priority": True}),
    pod(spec={"containers": [{"name": "web", "resources": {"limits": {"memory": "x"}}}]}),
    pod(spec={"overhead": {"cpu": "fast"}}),
    pod(spec={"containers": None}),
    pod(spec={"containers": [None]}),
    pod(spec={"containers": ["main"]}),
    pod(spec={"containers": [{"resources": "lots"}]}),
    pod(spec={"containers": [{"resources": {"requests": {"cpu": True}}}]}),
    pod(spec={"containers": [{"resources": {"requests": {"cpu": None}}}]}),
    pod(spec={"containers": [{"resources": {"requests": {"cpu": float("nan")}}}]}),
    pod(spec={"containers": [{"resources": {"requests": {"cpu": "9" * 1001}}}]}),
    pod(spec={"initContainers": [{"name": 7}]}),
    # int() refuses the exponent (a ValueError, not a QuantityError); the bad name comes first.
    pod(spec={"containers": [container("a", cpu="1e" + "1" * 5000), {"name": 5}]}),
    pod(spec={"containers": [container("a", cpu="1e" + "1" * 5000)]}),
    pod(spec={"node_name": "python-name"}),
    pod(spec={"node_name": "python-name", "nodeName": "alias"}),
    pod(spec={"schedulingGates": "quota"}),
    pod(spec={"schedulingGates": [{"name": 5}, {"name": ["x"]}]}),
    pod(labels={keys.POD_LABEL_QUOTA: 1}),
    pod(labels={keys.POD_LABEL_QUOTA: "a\ud800"}),
    pod(labels={1: "team"}),
    pod(spec={"schedulingGates": [{1: "quota"}]}),
    pod(spec={"overhead": {1: "1"}}),
    pod(spec={"containers": [{"resources": {"limits": {None: "1"}}}]}),
    {"metadata": {"name": "p", "annotations": {2: "x"}}},
    pod(status={"phase": None}),
    pod(status={"start_time": "2026-11-20T08:00:00Z"}),
    {"metadata": {"name": ""}},
    {"metadata": {"namespace": "ns"}},
    {"metadata": None},
    {"metadata": {"name": "p", "annotations": None}},
    {"metadata": {"name": "p", "annotations": {"a": "\udc00"}}},
    {"metadata": {"name": "p", "creation_timestamp": "2026-11-20T07:00:00Z"}},
    {"metadata": {"name": "p"}, "spec": None},
    {"metadata": {"name": "p"}, "status": []},
    {},
    [],
    None,
]


@pytest.mark.parametrize("raw", BROKEN)
def test_broken_and_unusual_bodies_get_the_validated_answer(raw: Any) -> None:
    assert_same_both_ways(raw)


# -- every field of a full body, one at a time --------------------------------------------------

STAMP = "2026-11-20T08:00:00Z"
FULL: Raw = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "labels": {keys.POD_LABEL_QUOTA: "team", keys.POD_LABEL_PREEMPTIBLE: "false"},
        "annotations": {"note": "x"},
        "creationTimestamp": STAMP,
        "deletionTimestamp": STAMP,
    },
    "spec": {
        "containers": [
            {
                "name": "main",
                "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}},
            }
        ],
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
        ],
        "overhead": {"cpu": "10m"},
        "nodeName": "n",
        "priority": 7,
        "schedulingGates": [{"name": "quota"}],
        "preemptionPolicy": "Never",
    },
    "status": {"phase": "Running", "startTime": STAMP},
}
ODD_VALUES = [None, "", "x", "a\ud800", 1, 1.5, True, [], ["a"], {}, {"a": 1}, {1: "a"}]
FieldPath = tuple[str | int, ...]


def paths(value: Any, prefix: FieldPath = ()) -> list[FieldPath]:
    """Every place in ``value``: dict values and list items, nested."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    found = []
    for key, item in items:
        found.append((*prefix, key))
        if isinstance(item, dict | list):
            found.extend(paths(item, (*prefix, key)))
    return found


def changed(path: FieldPath, value: Any, remove: bool = False) -> Raw:
    raw = copy.deepcopy(FULL)
    parent: Any = raw
    for key in path[:-1]:
        parent = parent[key]
    if remove:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return raw


def test_the_full_body_is_read_fast() -> None:
    assert_fast(FULL)


@pytest.mark.parametrize("path", paths(FULL), ids=lambda path: ".".join(map(str, path)))
def test_any_field_of_any_type_or_missing_gets_the_validated_answer(path: FieldPath) -> None:
    assert_same_both_ways(changed(path, None, remove=True))
    for value in ODD_VALUES:
        assert_same_both_ways(changed(path, value))


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


def container_asking(**requests: str) -> dict[str, Any]:
    return {"containers": [{"name": "main", "resources": {"requests": requests}}]}


@pytest.mark.parametrize("parser", [parse_pod, parse_pod_validated], ids=["fast", "validated"])
def test_pods_asking_the_same_share_one_requests_list(parser: Callable[[Any], Parsed]) -> None:
    """Pods of one workload hold one dict of requests between them (the engine's memory at
    100,000 pods); a pod asking otherwise has its own."""
    first, _ = parser(raw_pod(spec=container_asking(cpu="250m", memory="1Gi")))
    second, _ = parser(raw_pod(spec=container_asking(cpu="250m", memory="1Gi")))
    other, _ = parser(raw_pod(spec=container_asking(cpu="500m", memory="1Gi")))
    assert first is not None and second is not None and other is not None
    assert first.requests is second.requests
    assert other.requests == {"cpu": 500, "memory": 2**30}
    assert first.requests == {"cpu": 250, "memory": 2**30}
