"""The API client reads the proxy environment once, not at every request."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio import client

from elasticquota.kube.client import make_api_client, settle_environment_proxy

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://api.example.test:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def configuration(host: str, proxy: str | None = None) -> client.Configuration:
    settings = client.Configuration(host=host)
    settings.proxy = proxy
    return settings


@pytest.fixture(autouse=True)
def _no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_the_environment_proxy_is_settled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    settings = configuration("https://api.example.test:6443")
    settle_environment_proxy(settings)
    assert settings.proxy == "http://proxy.test:3128"


def test_no_proxy_and_the_kubeconfig_proxy_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", "api.example.test")
    bypassed = configuration("https://api.example.test:6443")
    settle_environment_proxy(bypassed)
    assert bypassed.proxy is None
    own = configuration("https://other.test:6443", proxy="http://own.test:8080")
    settle_environment_proxy(own)
    assert own.proxy == "http://own.test:8080"


# Loading a kubeconfig allocates enough to start a collection, which may then find the event loop
# pytest-asyncio 1.5 leaves behind after a synchronous test (pytest-asyncio#724), not ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_requests_do_not_read_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(KUBECONFIG)
    api = await make_api_client(str(kubeconfig), observer=lambda verb, code: None)
    try:
        assert api.rest_client.pool_manager.trust_env is False
        assert api.rest_client.proxy == "http://proxy.test:3128"
    finally:
        await api.close()
