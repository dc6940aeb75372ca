"""When the operator-managed webhook certificate is renewed, and by whom (``controller.certs``,
``controller.certrotation``), and the caBundle patch of the webhook configurations."""

from __future__ import annotations

import datetime
import ssl
import tempfile
from pathlib import Path

import pytest

from elasticquota.controller.certrotation import may_write
from elasticquota.controller.certs import (
    CA_CERT,
    CA_KEY,
    TLS_CERT,
    TLS_KEY,
    authority_usable,
    make_authority,
    make_serving,
    renewal_reason,
)
from elasticquota.kube.certificates import bundle_patch
from elasticquota.settings import Settings

NAMES = ["eq.eq-system.svc", "eq.eq-system.svc.cluster.local"]
START = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
WINDOW = datetime.timedelta(days=30)


def stored(days: int = 365, ca_days: int = 3650, names: list[str] = NAMES) -> dict[str, bytes]:
    authority = make_authority("eq-ca", ca_days, START)
    return {**make_serving(authority, names, days, START), **authority}


#: Another CA and certificate, for mixing with the first.
OTHER = stored()


def test_a_fresh_certificate_is_not_due() -> None:
    assert renewal_reason(stored(), NAMES, WINDOW, START) is None
    assert renewal_reason(stored(), NAMES, WINDOW, START + datetime.timedelta(days=334)) is None


def test_due_within_the_renewal_window_before_its_end() -> None:
    reason = renewal_reason(stored(), NAMES, WINDOW, START + datetime.timedelta(days=335, hours=1))
    assert reason is not None and reason.startswith(
        "the serving certificate expires at 2031-01-01T00:00:00Z"
    )
    assert not reason.startswith("unusable")


def test_due_when_the_ca_nears_its_end_and_then_the_ca_is_not_reused() -> None:
    data = stored(days=365, ca_days=100)  # the leaf is cut at the CA's end
    moment = START + datetime.timedelta(days=75)
    reason = renewal_reason(data, NAMES, WINDOW, moment)
    assert reason is not None and reason.startswith("the CA expires"), reason
    assert not authority_usable(data, WINDOW, moment)
    assert authority_usable(data, WINDOW, START)


def test_due_when_the_names_changed() -> None:
    reason = renewal_reason(stored(), [*NAMES, "eq.other.svc"], WINDOW, START)
    assert reason is not None and "are not" in reason


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d.pop(TLS_KEY), "unusable: no tls.key"),
        (lambda d: d.update({TLS_CERT: b"garbage"}), "unusable: unreadable PEM"),
        (lambda d: d.update({TLS_KEY: stored()[TLS_KEY]}), "unusable: tls.key is not the key"),
        (lambda d: d.update({CA_KEY: stored()[CA_KEY]}), "unusable: ca.key is not the key"),
        (lambda d: d.update({k: OTHER[k] for k in (CA_CERT, CA_KEY)}), "unusable: tls.crt is not"),
    ],
)
def test_an_unusable_secret_is_due_at_once(change: object, words: str) -> None:
    data = stored()
    change(data)  # type: ignore[operator]
    reason = renewal_reason(data, NAMES, WINDOW, START)
    assert reason is not None and reason.startswith(words), reason


def test_planned_renewals_are_the_leaders_unusable_ones_anyones() -> None:
    assert may_write("the serving certificate expires at 2030-12-31T00:00:00Z", leading=True)
    assert not may_write("the serving certificate expires at 2030-12-31T00:00:00Z", leading=False)
    assert not may_write("its names [] are not ['a']", leading=False)
    assert may_write("unusable: no tls.crt", leading=False)


def test_a_renewed_leaf_keeps_the_ca_and_is_served_by_python_ssl() -> None:
    data = stored()
    authority = {CA_CERT: data[CA_CERT], CA_KEY: data[CA_KEY]}
    later = START + datetime.timedelta(days=340)
    renewed = {**make_serving(authority, NAMES, 365, later), **authority}
    assert renewal_reason(renewed, NAMES, WINDOW, later) is None
    assert renewed[TLS_CERT] != data[TLS_CERT] and renewed[CA_CERT] == data[CA_CERT]
    with tempfile.TemporaryDirectory() as directory:
        pem = Path(directory) / "tls.pem"  # the one file the server loads: certificate + key
        pem.write_bytes(renewed[TLS_CERT] + renewed[TLS_KEY])
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
