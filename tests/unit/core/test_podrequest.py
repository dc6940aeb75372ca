"""A pod's effective request (Kubernetes ``PodRequests``): max(Σ containers, largest init step)
plus overhead, restartable init containers (sidecars) counted as running, exact sums converted
once. The API-server defaulting (requests from limits) is checked through ``parse_pod``."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pod_bodies import pod_with

from elasticquota.api.parse import parse_pod
from elasticquota.core.quantities.podrequest import InitContainer, effective_request
from elasticquota.core.quantities.quantity import parse_quantity


def q(**quantities: str) -> dict[str, Fraction]:
    """Exact requests from quantity strings (``nvidia_com_gpu`` -> ``nvidia.com/gpu``)."""
    return {
        name.replace("nvidia_com_", "nvidia.com/"): parse_quantity(text)
        for name, text in quantities.items()
    }


def init(restartable: bool = False, **quantities: str) -> InitContainer:
    return InitContainer(q(**quantities), restartable)


def test_app_containers_are_summed() -> None:
    request = effective_request([q(cpu="1", memory="1Gi"), q(cpu="500m", memory="512Mi")])
    assert request == {"cpu": 1500, "memory": 1536 * 1024**2}


def test_a_pod_without_requests_asks_for_nothing() -> None:
    assert effective_request([{}, {}]) == {}


def test_the_largest_init_container_wins_when_above_the_containers_sum() -> None:
    assert effective_request([q(cpu="1")], [init(cpu="3"), init(cpu="2")]) == {"cpu": 3000}


def test_the_containers_sum_wins_when_above_every_init_container() -> None:
    assert effective_request([q(cpu="2"), q(cpu="2")], [init(cpu="3")]) == {"cpu": 4000}


def test_the_max_is_taken_per_resource_independently() -> None:
    request = effective_request([q(cpu="1", memory="4Gi")], [init(cpu="3", memory="1Gi")])
    assert request == {"cpu": 3000, "memory": 4 * 1024**3}


def test_an_init_container_resource_absent_from_the_containers_still_counts() -> None:
    request = effective_request([q(cpu="1")], [init(nvidia_com_gpu="1")])
    assert request == {"cpu": 1000, "nvidia.com/gpu": 1}


def test_overhead_is_added_after_the_max() -> None:
    request = effective_request(
        [q(cpu="1")], [init(cpu="2")], overhead=q(cpu="250m", memory="120Mi")
    )
    assert request == {"cpu": 2250, "memory": 120 * 1024**2}


def test_a_sidecar_adds_to_the_app_containers() -> None:
    request = effective_request([q(cpu="1")], [init(restartable=True, cpu="500m")])
    assert request == {"cpu": 1500}


def test_a_sidecar_keeps_running_during_later_init_steps() -> None:
    # Steps: sidecar (1), then init 2 + sidecar 1 = 3; running: 1 + sidecar 1 = 2.
    request = effective_request([q(cpu="1")], [init(restartable=True, cpu="1"), init(cpu="2")])
    assert request == {"cpu": 3000}


def test_a_sidecar_does_not_add_to_init_steps_that_run_before_it() -> None:
    # Steps: init 2, then the sidecar (1); running: 1 + sidecar 1 = 2.
    request = effective_request([q(cpu="1")], [init(cpu="2"), init(restartable=True, cpu="1")])
    assert request == {"cpu": 2000}


def test_sidecars_accumulate_for_later_steps() -> None:
    request = effective_request(
        [q(cpu="100m")],
        [init(restartable=True, cpu="1"), init(restartable=True, cpu="1"), init(cpu="3")],
    )
    # Last init step: 3 + 1 + 1 = 5; running: 0.1 + 2 = 2.1.
    assert request == {"cpu": 5000}


def test_exact_sums_are_converted_once_not_per_container() -> None:
    request = effective_request([q(cpu="0.1m")] * 10)
    assert request == {"cpu": 1}


def test_whole_unit_resources_are_rounded_up_once_on_the_total() -> None:
    request = effective_request([q(memory="0.5")] * 3)
    assert request == {"memory": 2}


# -- through parse_pod: what the API server defaults ----------------------------------------


def requests_of(raw: dict[str, Any]) -> dict[str, int]:
    pod, problems = parse_pod(raw)
    assert problems == []
    assert pod is not None
    return dict(pod.requests)


def test_requests_default_from_limits_when_unset() -> None:
    raw = pod_with({"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}})
    assert requests_of(raw) == {"cpu": 2000, "memory": 1024**3}


def test_an_explicit_request_wins_over_the_limit() -> None:
    raw = pod_with({"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}}})
    assert requests_of(raw) == {"cpu": 1000}


def test_defaulting_is_per_resource() -> None:
    raw = pod_with(
        {
            "name": "c",
            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4", "memory": "2Gi"}},
        }
    )
    assert requests_of(raw) == {"cpu": 1000, "memory": 2 * 1024**3}


def test_init_container_requests_also_default_from_limits() -> None:
    raw = pod_with(
        {"name": "c", "resources": {"requests": {"cpu": "1"}}},
        initContainers=[{"name": "i", "resources": {"limits": {"cpu": "3"}}}],
    )
    assert requests_of(raw) == {"cpu": 3000}


def test_parse_pod_reads_sidecars_from_restart_policy_always() -> None:
    raw = pod_with(
        {"name": "c", "resources": {"requests": {"cpu": "1"}}},
        initContainers=[
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "migrate", "resources": {"requests": {"cpu": "1500m"}}},
        ],
    )
    # Running: 1 + 1; the migrate step: 1.5 + 1 (the proxy already runs).
    assert requests_of(raw) == {"cpu": 2500}


def test_parse_pod_adds_overhead() -> None:
    raw = pod_with({"name": "c", "resources": {"requests": {"cpu": "1"}}}, overhead={"cpu": "100m"})
    assert requests_of(raw) == {"cpu": 1100}


def test_parse_pod_converts_the_exact_total_once() -> None:
    containers = [{"name": f"c{i}", "resources": {"requests": {"cpu": "0.1m"}}} for i in range(10)]
    assert requests_of(pod_with(*containers)) == {"cpu": 1}
