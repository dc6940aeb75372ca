"""The verb of an API request, as the API error metric labels it (kube/client.py)."""

from __future__ import annotations

import pytest

from elasticquota.kube.client import api_verb

HOST = "https://10.0.0.1:6443"


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/api/v1/pods", "list"),
        ("GET", "/api/v1/namespaces", "list"),
        ("GET", "/api/v1/namespaces/team", "get"),
        ("GET", "/api/v1/namespaces/team/pods", "list"),
        ("GET", "/api/v1/namespaces/team/pods/p", "get"),
        ("GET", "/api/v1/namespaces/team/status", "get"),
        ("GET", "/apis/scheduling.sigs.k8s.io/v1alpha1/elasticquotas", "list"),
        ("GET", "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/team/elasticquotas", "list"),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/eq", "get"),
        ("GET", "/version/", "get"),
        ("GET", "/k8s/clusters/c-1/api/v1/nodes?limit=500", "list"),  # behind a proxy
        ("POST", "/api/v1/namespaces/team/events", "create"),
        ("POST", "/api/v1/namespaces/team/pods/p/binding", "create"),
        ("POST", "/api/v1/namespaces/team/pods/p/eviction", "evict"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/eq", "update"),
        ("PATCH", "/api/v1/namespaces/team/pods/p/status", "patch"),
        ("DELETE", "/api/v1/namespaces/team/pods/p", "delete"),
    ],
)
def test_verbs(method: str, path: str, verb: str) -> None:
    assert api_verb(method, HOST + path) == verb
