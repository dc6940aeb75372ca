"""The one request that a call made to KMock, checked to go where it should.

Shared by the KMock tests of the kube adapters, which each call one adapter function and check the
single request it sent (its verb and path) before what it carried.
"""

from __future__ import annotations

import kmock


def only_request(
    server: kmock.KubernetesEmulator, method: kmock.method, path: str
) -> kmock.Request:
    """The only request ``server`` received, asserted to be ``method`` at ``path``."""
    requests = list(server)
    assert len(requests) == 1, f"one request expected, got {[str(r) for r in requests]}"
    (request,) = requests
    sent = (request.method, request.url.path)
    assert sent == (method, path), f"{sent} is not {(method, path)}"
    return request
