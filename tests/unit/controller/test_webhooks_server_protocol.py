"""The webhook server's own parts: Kopf's admission server protocol served over HTTPS.

Rules (controller/webhooks/server.py): called with a webhook function, the server listens and
yields the client configuration, whose URL the API server calls (an IPv6 host in brackets, port
443 left out, a catch-all listen address reached on loopback) and whose caBundle verifies the
served certificate (self-signed, made in memory: no file is left). ``POST {path}/{id}`` hands the
review's JSON to the function for webhook ``id`` with the request's headers and answers its
result as JSON; a body that is not JSON or no AdmissionReview is a 400 with the reason, without
calling the function; Kopf's errors of a review it cannot serve are 409 (ambiguous resource), 404
(unknown resource), 400 (any other). A quota UPDATE that changes nothing the quota rules read is
answered "allowed" at once, without the function (what API servers with the quota webhook's
matchConditions do not send).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import aiohttp
import kopf
import pytest
from cryptography import x509

from elasticquota.controller.webhooks import WebhookServer, kopfhooks
from elasticquota.controller.webhooks.server import (
    accessible_host,
    spared_quota_update,
    webhook_url,
)

REVIEW = {"request": {"uid": "u1", "resource": {"group": "", "version": "v1", "resource": "pods"}}}
ANSWER = {"response": {"uid": "u1", "allowed": True}}


class Webhook:
    """A webhook function that records its calls and answers ``ANSWER`` or raises ``error``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[object, dict[str, Any]]] = []

    async def __call__(self, request: object, **details: Any) -> object:
        self.calls.append((request, details))
        if self.error is not None:
            raise self.error
        return ANSWER


@contextlib.asynccontextmanager
async def serving(fn: Webhook, **options: Any) -> AsyncIterator[kopf.WebhookClientConfig]:
    """The server on a free loopback port until the block ends; its first client configuration."""
    server = WebhookServer(**{"addr": "127.0.0.1", "host": "127.0.0.1", **options})
    async with server:
        yield await anext(aiter(server(cast(kopf.WebhookFn, fn))))


async def post(config: kopf.WebhookClientConfig, webhook: str, body: bytes) -> tuple[int, str]:
    """A POST to the webhook's URL (Kopf's: the configuration's, the webhook's id appended) as the
    API server makes it, verifying the served certificate against the caBundle for the URL's
    host."""
    bundle = base64.b64decode(config["caBundle"] or "").decode()
    context = ssl.create_default_context(cadata=bundle)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{(config['url'] or '').rstrip('/')}/{webhook}",
            data=body,
            headers={"Content-Type": "application/json"},
            ssl=context,
        ) as reply,
    ):
        return reply.status, await reply.text()


@pytest.mark.parametrize(
    ("host", "port", "path", "url"),
    [
        ("eq.svc", 9443, "", "https://eq.svc:9443"),
        ("eq.svc", 443, "/hooks", "https://eq.svc/hooks"),
        ("10.0.0.1", 8443, "hooks", "https://10.0.0.1:8443/hooks"),
        ("::1", 9443, "", "https://[::1]:9443"),
        ("fd00::0001", 443, "", "https://[fd00::1]"),
    ],
)
def test_the_url_brackets_ipv6_and_leaves_out_the_https_port(
    host: str, port: int, path: str, url: str
) -> None:
    assert webhook_url(host, port, path) == url


@pytest.mark.parametrize(
    ("addr", "host"),
    [
        (None, "localhost"),
        ("0.0.0.0", "127.0.0.1"),
        ("::", "::1"),
        ("10.1.2.3", "10.1.2.3"),
        ("fd00::1", "fd00::1"),
        ("eq.svc", "eq.svc"),
    ],
)
def test_a_catch_all_address_is_reached_on_loopback(addr: str | None, host: str) -> None:
    assert accessible_host(addr) == host


async def test_a_review_reaches_the_function_and_its_answer_the_api_server() -> None:
    fn = Webhook()
    async with serving(fn, path="/hooks/") as config:
        assert (config["url"] or "").startswith("https://127.0.0.1:")
        assert (config["url"] or "").endswith("/hooks/")
        status, text = await post(config, "validate-pod", json.dumps(REVIEW).encode())
    assert (status, json.loads(text)) == (200, ANSWER)
    [(request, details)] = fn.calls
    assert request == REVIEW
    assert details["webhook"] == "validate-pod"
    assert details["headers"]["Content-Type"] == "application/json"
    assert details["sslpeer"] is None  # the client sent no certificate


async def test_the_self_signed_certificate_is_its_own_ca_bundle_for_host_and_address() -> None:
    async with serving(Webhook(), host="eq.svc") as config:
        bundle = base64.b64decode(config["caBundle"] or "")
        assert (config["url"] or "").startswith("https://eq.svc:")
    certificate = x509.load_pem_x509_certificate(bundle)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["eq.svc"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert certificate.issuer == certificate.subject


#: A process that starts the server with a self-signed certificate, under the ``TMPDIR`` given.
START_IN_TMPDIR = """
import asyncio, sys, tempfile
from elasticquota.controller.webhooks import WebhookServer

async def never_called(*request, **details):
    raise AssertionError("no review is sent")

async def main():
    assert tempfile.gettempdir() == sys.argv[1], tempfile.gettempdir()
    async with WebhookServer(addr="127.0.0.1", host="127.0.0.1") as server:
        config = await anext(aiter(server(never_called)))
        assert config["caBundle"]

asyncio.run(main())
"""


def test_the_self_signed_certificate_leaves_no_file(tmp_path: Path) -> None:
    """``ssl`` loads a certificate from files only: they are gone once it is loaded."""
    environment = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run(
        [sys.executable, "-c", START_IN_TMPDIR, str(tmp_path)], env=environment, check=True
    )
    assert list(tmp_path.iterdir()) == []


def json_error(text: str) -> str:
    """What the JSON parser says of ``text``."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return str(error)
    raise AssertionError(f"{text!r} is JSON")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", json_error("{not json")),
        (b"", json_error("")),
        (b"[]", "not an AdmissionReview: no request object"),
        (b'{"request": {"uid": "1"}}',
         "the admission request has no resource (group, version, resource)"),
    ],
)  # fmt: skip
async def test_a_body_that_is_no_review_is_a_bad_request_with_the_reason(
    body: bytes, reason: str
) -> None:
    fn = Webhook()
    async with serving(fn) as config:
        assert await post(config, "validate-pod", body) == (400, f"400: {reason}")
    assert fn.calls == []


def kopf_error(name: str) -> type[Exception]:
    """One of Kopf's (private) errors of a review it cannot serve."""
    found: type[Exception] = kopfhooks.find(kopfhooks.Hook(kopfhooks.ADMISSION, name, "a test"))
    return found


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("AmbiguousResourceError", 409),
        ("UnknownResourceError", 404),
        ("MissingDataError", 400),
        ("WebhookError", 400),
    ],
)
async def test_kopfs_errors_of_a_review_are_answered_as_kopf_does(name: str, status: int) -> None:
    fn = Webhook(kopf_error(name)("no such resource: x.example.com"))
    async with serving(fn) as config:
        answer = await post(config, "validate-pod", json.dumps(REVIEW).encode())
    assert answer == (status, f"{status}: no such resource: x.example.com")


async def test_any_other_error_of_the_function_is_a_server_error() -> None:
    async with serving(Webhook(RuntimeError("a bug"))) as config:
        status, _ = await post(config, "validate-pod", json.dumps(REVIEW).encode())
    assert status == 500


def quota_review(operation: str, old_min: str, new_min: str) -> dict[str, Any]:
    """A review of an ElasticQuota whose min goes from ``old_min`` to ``new_min`` while its
    status moves (as a write of the operator's figures moves it)."""

    def quota(cpu: str, used: str) -> dict[str, Any]:
        metadata = {"name": "q", "namespace": "team", "annotations": {"note": used}}
        return {"metadata": metadata, "spec": {"min": {"cpu": cpu}}, "status": {"used": {}}}

    resource = {"group": "scheduling.sigs.k8s.io", "version": "v1alpha1", "resource": "quotas"}
    request = {"uid": "u2", "operation": operation, "resource": resource, "userInfo": {}}
    request |= {"object": quota(new_min, "2"), "oldObject": quota(old_min, "1")}
    return {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": request}


@pytest.mark.parametrize(
    ("webhook", "review", "spared"),
    [
        ("validate-elasticquota", quota_review("UPDATE", "1", "1"), True),
        ("validate-elasticquota", quota_review("UPDATE", "1", "2"), False),
        ("validate-elasticquota", quota_review("CREATE", "1", "1"), False),
        ("mutate-elasticquota", quota_review("UPDATE", "1", "1"), False),
    ],
)
async def test_an_update_the_quota_rules_ignore_is_allowed_at_once_without_the_function(
    webhook: str, review: dict[str, Any], spared: bool
) -> None:
    """What API servers with the quota webhook's matchConditions never send (1.28+) older ones
    do: answered "allowed" as Kopf answers, its review's API version and uid kept."""
    fn = Webhook()
    async with serving(fn, spared=spared_quota_update) as config:
        status, text = await post(config, webhook, json.dumps(review).encode())
    assert status == 200
    if spared:
        assert fn.calls == []
        assert json.loads(text) == {
            "apiVersion": "admission.k8s.io/v1beta1",
            "kind": "AdmissionReview",
            "response": {"uid": "u2", "allowed": True},
        }
    else:
        assert [request for request, _ in fn.calls] == [review]
