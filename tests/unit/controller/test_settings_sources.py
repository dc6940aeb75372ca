"""Settings: defaults, then ``ELASTIC_QUOTA_*`` environment variables, then command-line overrides.

Rules (settings.py): every knob has a documented default; the environment overrides defaults and
explicit overrides (the CLI) override the environment, an override of None meaning "not given";
values are validated wherever they come from; the Lease lives in the reserved namespace unless told
otherwise; a replica's default identity is its pod name (``POD_NAME``), else its host name — the
same across restarts of its container; lease duration > renew deadline > retry period.
"""

from __future__ import annotations

import socket

import pytest
from pydantic import ValidationError

from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE
from elasticquota.settings import Settings


def test_defaults() -> None:
    settings = Settings.from_sources()
    assert settings.kubeconfig is None
    assert settings.reserved_namespace == DEFAULT_RESERVED_NAMESPACE
    assert settings.scale_min_quota is True
    assert (settings.reconcile_interval, settings.profile_debounce) == (1.0, 1.0)
    assert settings.revocation_delay == 120.0
    assert settings.dry_run is False
    assert settings.user_limits_refuse_pods is False
    assert settings.metrics_port == 8080
    assert settings.log_level == "INFO"
    assert settings.ignore_namespaces == []
    assert (settings.lease_name, settings.lease_namespace) == ("elastic-quota-operator", None)
    assert settings.lease_duration == 15.0
    assert settings.write_concurrency == 16
    assert (settings.default_user, settings.user_metrics_max_per_quota) == ("nobody", 20)


def test_the_default_identity_is_the_pod_name_else_the_host_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POD_NAME", raising=False)
    assert Settings.from_sources().identity == socket.gethostname()  # no process id: stable
    monkeypatch.setenv("POD_NAME", "elastic-quota-operator-7d9c-x2x4k")
    assert Settings.from_sources().identity == "elastic-quota-operator-7d9c-x2x4k"
    monkeypatch.setenv("ELASTIC_QUOTA_IDENTITY", "chosen")
    assert Settings.from_sources().identity == "chosen"


def test_the_environment_overrides_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELASTIC_QUOTA_RECONCILE_INTERVAL", "2.5")
    monkeypatch.setenv("ELASTIC_QUOTA_DRY_RUN", "true")
    monkeypatch.setenv("ELASTIC_QUOTA_IGNORE_NAMESPACES", '["kube-system", "monitoring"]')
    monkeypatch.setenv("elastic_quota_lease_name", "lower-case-works-too")

    settings = Settings.from_sources()

    assert settings.reconcile_interval == 2.5
    assert settings.dry_run is True
    assert settings.ignore_namespaces == ["kube-system", "monitoring"]
    assert settings.lease_name == "lower-case-works-too"


def test_overrides_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELASTIC_QUOTA_RECONCILE_INTERVAL", "2.5")
    monkeypatch.setenv("ELASTIC_QUOTA_METRICS_PORT", "9000")

    settings = Settings.from_sources({"reconcile_interval": 0.5, "metrics_port": None})

    assert settings.reconcile_interval == 0.5
    assert settings.metrics_port == 9000  # None is "not given on the command line"


def test_a_false_override_is_an_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELASTIC_QUOTA_SCALE_MIN_QUOTA", "true")
    assert Settings.from_sources({"scale_min_quota": False}).scale_min_quota is False


def test_unknown_environment_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELASTIC_QUOTA_NO_SUCH_KNOB", "1")
    assert Settings.from_sources().reconcile_interval == 1.0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reconcile_interval", 0),
        ("reconcile_interval", -1),
        ("profile_debounce", -0.1),
        ("revocation_delay", -1),
        ("metrics_port", 65536),
        ("metrics_port", -1),
        ("lease_duration", 0),
        ("write_concurrency", 0),
        ("reconcile_interval", "soon"),
    ],
)
def test_invalid_overrides_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings.from_sources({field: value})
    assert raised.value.errors()[0]["loc"] == (field,)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("ELASTIC_QUOTA_RECONCILE_INTERVAL", "0"), ("ELASTIC_QUOTA_WRITE_CONCURRENCY", "many")],
)
def test_invalid_environment_values_are_refused(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError):
        Settings.from_sources()


def test_limits_themselves_are_accepted() -> None:
    settings = Settings.from_sources(
        {"profile_debounce": 0, "metrics_port": 0, "write_concurrency": 1, "revocation_delay": 0}
    )
    assert (settings.profile_debounce, settings.metrics_port) == (0, 0)


def test_the_lease_lives_in_the_reserved_namespace_unless_told_otherwise() -> None:
    assert Settings.from_sources({"reserved_namespace": "q"}).effective_lease_namespace == "q"
    settings = Settings.from_sources({"reserved_namespace": "q", "lease_namespace": "leases"})
    assert settings.effective_lease_namespace == "leases"


def test_a_retry_period_longer_than_half_the_lease_is_refused() -> None:
    with pytest.raises(ValidationError, match="lease_retry_period"):
        Settings.from_sources({"lease_duration": 2, "lease_retry_period": 1.5})
    settings = Settings.from_sources({"lease_duration": 2, "lease_retry_period": 1})
    assert settings.lease_retry_period == 1


def test_the_renew_deadline_is_two_thirds_of_the_lease_unless_set() -> None:
    assert Settings.from_sources().effective_lease_renew_deadline == 10.0
    assert Settings.from_sources({"lease_duration": 3}).effective_lease_renew_deadline == 2.0
    settings = Settings.from_sources({"lease_duration": 20, "lease_renew_deadline": 12})
    assert settings.effective_lease_renew_deadline == 12.0


@pytest.mark.parametrize(
    "values",
    [
        {"lease_duration": 15, "lease_renew_deadline": 15},  # not below the lease
        {"lease_duration": 15, "lease_renew_deadline": 20},
        {"lease_duration": 15, "lease_renew_deadline": 0.5},  # not above the retry period
        {"lease_duration": 15, "lease_renew_deadline": 0.4, "lease_retry_period": 0.4},
    ],
)
def test_a_renew_deadline_outside_retry_period_and_lease_is_refused(
    values: dict[str, float],
) -> None:
    with pytest.raises(ValidationError, match=r"lease_renew_deadline \(.* s\) must be below"):
        Settings.from_sources(values)
