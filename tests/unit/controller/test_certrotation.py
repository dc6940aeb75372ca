"""When the operator-managed webhook certificate is renewed, and by whom
(``controller.webhooks.certs``, ``controller.webhooks.certrotation``), and the caBundle patch of the
webhook configurations."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import tempfile
from pathlib import Path

import aiohttp
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from kubernetes_asyncio.client.exceptions import ApiException

from elasticquota.controller.webhooks import certrotation, certs
from elasticquota.controller.webhooks.certrotation import WebhookCertificates, may_write
from elasticquota.kube.certificates import StoredCertificate, bundle_patch
from elasticquota.settings import Settings

NAMES = ["eq.eq-system.svc", "eq.eq-system.svc.cluster.local"]
START = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
WINDOW = datetime.timedelta(days=30)


def stored(days: int = 365, ca_days: int = 3650, names: list[str] = NAMES) -> dict[str, bytes]:
    authority = certs.make_authority("eq-ca", ca_days, START)
    return {**certs.make_serving(authority, names, days, START), **authority}


def encrypted(key_pem: bytes) -> bytes:
    """The key PEM encrypted with a password (which the operator never has)."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )


#: Another CA and certificate, for mixing with the first.
OTHER = stored()


def test_a_fresh_certificate_is_not_due() -> None:
    assert certs.renewal_reason(stored(), NAMES, WINDOW, START) is None
    assert (
        certs.renewal_reason(stored(), NAMES, WINDOW, START + datetime.timedelta(days=334)) is None
    )


def test_due_within_the_renewal_window_before_its_end() -> None:
    reason = certs.renewal_reason(
        stored(), NAMES, WINDOW, START + datetime.timedelta(days=335, hours=1)
    )
    assert reason is not None and reason.startswith(
        "the serving certificate expires at 2031-01-01T00:00:00Z"
    )
    assert not reason.startswith("unusable")


def test_due_when_the_ca_nears_its_end_and_then_the_ca_is_not_reused() -> None:
    data = stored(days=365, ca_days=100)  # the leaf is cut at the CA's end
    moment = START + datetime.timedelta(days=75)
    reason = certs.renewal_reason(data, NAMES, WINDOW, moment)
    assert reason is not None and reason.startswith("the CA expires"), reason
    assert not certs.authority_usable(data, WINDOW, moment)
    assert certs.authority_usable(data, WINDOW, START)


def test_due_when_the_names_changed() -> None:
    reason = certs.renewal_reason(stored(), [*NAMES, "eq.other.svc"], WINDOW, START)
    assert reason is not None and "are not" in reason


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d.pop(certs.TLS_KEY), "unusable: no tls.key"),
        (lambda d: d.update({certs.TLS_CERT: b"garbage"}), "unusable: unreadable PEM"),
        (lambda d: d.update({certs.TLS_KEY: encrypted(d[certs.TLS_KEY])}), "unusable: unreadable"),
        (lambda d: d.update({certs.CA_KEY: encrypted(d[certs.CA_KEY])}), "unusable: unreadable"),
        (
            lambda d: d.update({certs.TLS_KEY: stored()[certs.TLS_KEY]}),
            "unusable: tls.key is not the key",
        ),
        (
            lambda d: d.update({certs.CA_KEY: stored()[certs.CA_KEY]}),
            "unusable: ca.key is not the key",
        ),
        (
            lambda d: d.update({k: OTHER[k] for k in (certs.CA_CERT, certs.CA_KEY)}),
            "unusable: tls.crt is not",
        ),
    ],
)
def test_an_unusable_secret_is_due_at_once(change: object, words: str) -> None:
    data = stored()
    change(data)  # type: ignore[operator]
    reason = certs.renewal_reason(data, NAMES, WINDOW, START)
    assert reason is not None and reason.startswith(words), reason


def test_planned_renewals_are_the_leaders_unusable_ones_anyones() -> None:
    assert may_write("the serving certificate expires at 2030-12-31T00:00:00Z", leading=True)
    assert not may_write("the serving certificate expires at 2030-12-31T00:00:00Z", leading=False)
    assert not may_write("its names [] are not ['a']", leading=False)
    assert may_write("unusable: no tls.crt", leading=False)


def test_a_renewed_leaf_keeps_the_ca_and_is_served_by_python_ssl() -> None:
    data = stored()
    authority = {certs.CA_CERT: data[certs.CA_CERT], certs.CA_KEY: data[certs.CA_KEY]}
    later = START + datetime.timedelta(days=340)
    renewed = {**certs.make_serving(authority, NAMES, 365, later), **authority}
    assert certs.renewal_reason(renewed, NAMES, WINDOW, later) is None
    assert (
        renewed[certs.TLS_CERT] != data[certs.TLS_CERT]
        and renewed[certs.CA_CERT] == data[certs.CA_CERT]
    )
    with tempfile.TemporaryDirectory() as directory:
        pem = Path(directory) / "tls.pem"  # the one file the server loads: certificate + key
        pem.write_bytes(renewed[certs.TLS_CERT] + renewed[certs.TLS_KEY])
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(pem, pem)


def test_the_bundle_patch_touches_only_webhooks_without_it() -> None:
    webhooks = [
        {"name": "a.x", "clientConfig": {"service": {}}},
        {"name": "b.x", "clientConfig": {"caBundle": "QUJD"}},
        {"name": "c.x", "clientConfig": {"caBundle": "old"}},
    ]
    assert bundle_patch(webhooks, "QUJD") == [
        {"op": "test", "path": "/webhooks/0/name", "value": "a.x"},
        {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "QUJD"},
        {"op": "test", "path": "/webhooks/2/name", "value": "c.x"},
        {"op": "add", "path": "/webhooks/2/clientConfig/caBundle", "value": "QUJD"},
    ]
    assert bundle_patch(webhooks[1:2], "QUJD") == []


def test_settings_refuse_two_certificate_sources_and_a_window_as_long_as_the_validity() -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        Settings(webhook_cert_secret="tls", webhook_cert_file="/a", webhook_key_file="/b")
    with pytest.raises(ValueError, match="webhook_cert_renew_before_days"):
        Settings(webhook_cert_validity_days=30, webhook_cert_renew_before_days=30)
    settings = Settings(webhook_host="eq.ns.svc")
    assert settings.effective_webhook_cert_dns_names == ["eq.ns.svc"]


# -- two replicas over one Secret (an in-memory store with the API server's resourceVersion rule)


class SharedSecret:
    """One Secret as the API server keeps it: create refuses an existing one (409), replace one
    read at an older resourceVersion (409); ``refuse`` makes the next calls fail with it."""

    def __init__(self) -> None:
        self.stored: StoredCertificate | None = None
        self.version = 0
        self.writes: list[str] = []
        self.refuse: list[int] = []
        self.namespace, self.name = "eq-system", "eq-webhook-tls"

    def _fail(self) -> None:
        if self.refuse:
            status = self.refuse.pop(0)
            if status == 0:  # a connection the server closed (no OSError, no ApiException)
                raise aiohttp.ServerDisconnectedError()
            raise ApiException(status=status)

    async def read(self) -> StoredCertificate | None:
        self._fail()
        return self.stored

    async def create(self, data: dict[str, bytes]) -> None:
        self._fail()
        if self.stored is not None:
            raise ApiException(status=409)
        self._store(data, "create")

    async def replace(self, data: dict[str, bytes], resource_version: str) -> None:
        self._fail()
        assert self.stored is not None
        if resource_version != self.stored.resource_version:
            raise ApiException(status=409)
        self._store(data, "replace")

    def _store(self, data: dict[str, bytes], verb: str) -> None:
        self.version += 1
        self.stored = StoredCertificate(dict(data), str(self.version))
        self.writes.append(verb)


def replica(
    shared: SharedSecret,
    tmp_path: Path,
    name: str,
    clock: list[datetime.datetime],
    start_retry: float = certrotation.START_RETRY,
) -> WebhookCertificates:
    settings = Settings(
        webhook_port=9443,
        webhook_cert_secret=shared.name,
        webhook_cert_dns_names=NAMES,
        lease_namespace=shared.namespace,
    )
    certificates = WebhookCertificates(
        settings,
        object(),
        asyncio.Event(),
        directory=tmp_path / name,
        now=lambda: clock[0],
        start_retry=start_retry,
    )
    certificates.secret = shared  # type: ignore[assignment]
    return certificates


async def test_the_first_replica_creates_the_other_serves_its_certificate(tmp_path: Path) -> None:
    shared, clock = SharedSecret(), [START]
    first, second = replica(shared, tmp_path, "a", clock), replica(shared, tmp_path, "b", clock)
    await first.prepare()
    await second.prepare()
    assert shared.writes == ["create"]
    assert first.serving == second.serving == shared.stored.data  # type: ignore[union-attr]
    pem = (tmp_path / "b" / "tls.pem").read_bytes()
    assert pem == shared.stored.data[certs.TLS_CERT] + shared.stored.data[certs.TLS_KEY]  # type: ignore[union-attr]
    assert first.server_settings().webhook_cert_file == str(tmp_path / "a" / "tls.pem")


async def test_a_create_race_is_lost_quietly_and_the_winners_certificate_served(
    tmp_path: Path,
) -> None:
    shared, clock = SharedSecret(), [START]
    late = replica(shared, tmp_path, "late", clock)
    winner = replica(shared, tmp_path, "winner", clock)

    async def read_then_lose() -> StoredCertificate | None:
        shared.read = original  # type: ignore[method-assign]
        await winner.prepare()  # the other replica creates it in between
        return None

    original = shared.read
    shared.read = read_then_lose  # type: ignore[method-assign]
    await late.prepare()
    assert shared.writes == ["create"] and late.serving == winner.serving


async def test_a_due_renewal_is_the_leaders_and_keeps_the_ca(tmp_path: Path) -> None:
    shared, clock = SharedSecret(), [START]
    leader, standby = replica(shared, tmp_path, "a", clock), replica(shared, tmp_path, "b", clock)
    await leader.prepare()
    await standby.prepare()
    before = dict(shared.stored.data)  # type: ignore[union-attr]
    clock[0] = START + datetime.timedelta(days=340)  # inside the 30-day window
    await standby.round()
    assert shared.writes == ["create"], "a standby renewed"
    leader.leading.set()
    await leader.round()
    assert shared.writes == ["create", "replace"]
    after = shared.stored.data  # type: ignore[union-attr]
    assert (
        after[certs.TLS_CERT] != before[certs.TLS_CERT]
        and after[certs.CA_CERT] == before[certs.CA_CERT]
    )
    await standby.round()  # it picks the renewal up
    assert standby.serving == after and leader.serving == after


async def test_an_unusable_secret_is_replaced_by_any_replica(tmp_path: Path) -> None:
    shared, clock = SharedSecret(), [START]
    standby = replica(shared, tmp_path, "a", clock)
    await standby.prepare()
    broken = dict(shared.stored.data)  # type: ignore[union-attr]
    broken.pop(certs.CA_KEY)
    shared.stored = StoredCertificate(broken, "99")
    await standby.round()
    assert shared.writes == ["create", "replace"]
    assert certs.renewal_reason(shared.stored.data, NAMES, WINDOW, START) is None  # type: ignore[union-attr]


async def test_a_secret_with_an_encrypted_key_is_replaced_at_start_up(tmp_path: Path) -> None:
    """The key cannot be read without a password: unusable, replaced by the first replica that
    starts (not a start-up that retries the same failure for ever)."""
    shared, clock = SharedSecret(), [START]
    data = stored()
    data[certs.TLS_KEY] = encrypted(data[certs.TLS_KEY])
    shared.stored = StoredCertificate(data, "7")
    standby = replica(shared, tmp_path, "a", clock)
    await asyncio.wait_for(standby.prepare(), 5)
    assert shared.writes == ["replace"] and standby.serving == shared.stored.data


async def test_refusals_are_retried_and_never_end_the_loop(tmp_path: Path) -> None:
    """A 403 (no RBAC for the Secret) or a 500 at start-up is retried until it passes; in the
    loop it (or a dropped connection) is logged and the next round tries again: the operator is
    never stopped by it."""
    shared, clock = SharedSecret(), [START]
    certificates = replica(shared, tmp_path, "a", clock, start_retry=0.01)
    shared.refuse = [403, 0, 500]
    await certificates.prepare()
    assert shared.writes == ["create"] and certificates.serving is not None
    certificates.settings = certificates.settings.model_copy(
        update={"webhook_cert_check_interval": 0.01}
    )
    shared.refuse = [403, 0, 500]
    loop = asyncio.create_task(certificates.run())
    await asyncio.sleep(0.2)
    assert not loop.done(), loop
    loop.cancel()
    assert shared.refuse == []
