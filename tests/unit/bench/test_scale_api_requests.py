"""The scale benchmark's count of what the API server was asked during a phase
(``scalebench.apirequests``), read from the server's own Prometheus counters."""

from __future__ import annotations

from scalebench.apirequests import RequestCounts


def sample(name: str, verb: str, resource: str, value: str, subresource: str = "") -> str:
    """One line of the API server's ``/metrics`` as it writes them."""
    labels = (
        f'component="apiserver",group="",resource="{resource}",scope="cluster",'
        f'subresource="{subresource}",verb="{verb}",version="v1"'
    )
    return f"{name}{{{labels}}} {value}"


REQUESTS = "apiserver_request_total"
SIZES = "apiserver_response_sizes_sum"
BEFORE = "\n".join(
    [
        "# TYPE apiserver_request_total counter",
        sample(REQUESTS, "LIST", "pods", "3"),
        sample(REQUESTS, "PUT", "leases", "10"),
        sample(SIZES, "LIST", "pods", "4e+06"),
        sample("apiserver_response_sizes_count", "LIST", "pods", "3"),
    ]
)
AFTER = "\n".join(
    [
        sample(REQUESTS, "LIST", "pods", "5"),
        sample(REQUESTS, "PUT", "leases", "13"),
        sample(REQUESTS, "PATCH", "pods", "1", subresource="status"),
        sample(SIZES, "LIST", "pods", "6.5e+06"),
    ]
)


def test_requests_and_answer_bytes_by_verb_and_resource_since_the_first_reading() -> None:
    asked = RequestCounts.parse(AFTER).since(RequestCounts.parse(BEFORE))
    assert dict(asked.requests) == {"LIST pods": 2, "PUT leases": 3, "PATCH pods/status": 1}
    assert dict(asked.answer_bytes) == {"LIST pods": 2_500_000}


def test_the_line_shows_the_busiest_first_with_their_bytes() -> None:
    asked = RequestCounts.parse(AFTER).since(RequestCounts.parse(BEFORE))
    assert asked.line() == (
        "requests=6 answer_mb=2.5 | PUT leases 3 (0.0 MB) | LIST pods 2 (2.5 MB)"
        " | PATCH pods/status 1 (0.0 MB)"
    )
