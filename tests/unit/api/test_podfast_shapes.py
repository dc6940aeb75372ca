"""The fast Pod reader against the validated path on written bodies: the repository's example
pods, the shapes the tests build, broken and unusual bodies, and pods asking the same sharing one
requests list."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pod_bodies import container, pod_with
from podfast_checks import Raw, assert_fast, assert_same_both_ways
from raw_objects import raw_pod

from elasticquota.api.parse import Parsed, parse_pod, parse_pod_validated
from elasticquota.core import keys

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "workloads.yaml"
QUOTA_ALIAS = keys.POD_LABEL_QUOTA_ALIASES[1]


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


def pod(
    spec: Raw | None = None, labels: dict[Any, Any] | None = None, status: Raw | None = None
) -> Raw:
    return raw_pod(labels=labels, spec=spec, status=status)


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
            "uid": "6f1c0d6e-2f59-4b8e-9d6a-0c2b51b7a0f1",
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
    {"metadata": {"name": "p", "uid": None}},
    {"metadata": {"name": "p", "uid": 7}},
    {"metadata": {"name": "p", "uid": "ü-1"}},
    {"metadata": {"name": "p"}, "spec": None},
    {"metadata": {"name": "p"}, "status": []},
    {},
    [],
    None,
]


@pytest.mark.parametrize("raw", BROKEN)
def test_broken_and_unusual_bodies_get_the_validated_answer(raw: Any) -> None:
    assert_same_both_ways(raw)


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
