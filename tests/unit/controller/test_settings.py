"""Settings: defaults, then ``ELASTIC_QUOTA_*`` environment variables, then command-line overrides.

Rules (settings.py): every knob has a documented default; the environment overrides defaults and
explicit overrides (the CLI) override the environment, an override of None meaning "not given";
values are validated wherever they come from; the Lease lives in the reserved namespace unless told
otherwise; a replica's default identity is its pod name (``POD_NAME``), else its host name — the
same across restarts of its container; lease duration > renew deadline > retry period.

Every setting has a checked range (bounds, a pattern, a set of names): the walk over every field
refuses the values just outside it (from the code and from the environment) and accepts the limits
themselves, so a setting added without a range fails here. A refusal is one line naming the
setting, the value, where it came from and the allowed range; ``elastic-quota run`` prints it and
exits with 2, never a traceback, never a hang.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from elasticquota.cli import main
from elasticquota.controller.runner import make_state
from elasticquota.core.keys import DEFAULT_RESERVED_NAMESPACE
from elasticquota.settings import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    DNS_SUBDOMAIN_OR_EMPTY,
    DOTTED_SUBDOMAIN_OR_EMPTY,
    IDENTITY_NAME,
    USER_NAME,
    Settings,
    allowed_values,
    invalid_settings_message,
)


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


# -- every setting's range -------------------------------------------------------------------------

SCHEMA = Settings.model_json_schema()["properties"]
#: The longest valid value of each name pattern (its maxLength is the limit).
LONGEST = {
    DNS_LABEL: lambda length: "a" * length,
    DNS_SUBDOMAIN: lambda length: ".".join(["a" * 63] * 3) + "." + "a" * (length - 3 * 64),
    DOTTED_SUBDOMAIN_OR_EMPTY: lambda length: LONGEST[DNS_SUBDOMAIN](length),
    DNS_SUBDOMAIN_OR_EMPTY: lambda length: LONGEST[DNS_SUBDOMAIN](length),
    IDENTITY_NAME: lambda length: "system:serviceaccount:*" + "a" * (length - 23),
    USER_NAME: lambda length: "system:serviceaccount:" + "a" * (length - 23) + "$",
}
#: A value each pattern refuses (for names: not a DNS name).
OFF_PATTERN = {IDENTITY_NAME: "two words", USER_NAME: "*"}


def limits(schema: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """(values at the limits, which are accepted; values just beyond them, which are refused)
    of one field's JSON schema. A field without a limit fails the test."""
    if "anyOf" in schema:
        (kind,) = [option for option in schema["anyOf"] if option.get("type") != "null"]
        accepted, refused = limits(kind)
        return [None, *accepted], refused
    if "enum" in schema:
        return list(schema["enum"]), ["no-such-choice", ""]
    if schema.get("type") == "boolean":
        return [True, False], ["maybe"]
    if schema.get("type") == "array":
        accepted, refused = limits(schema["items"])
        return [[], [value for value in accepted if value is not None]], [[bad] for bad in refused]
    if schema.get("type") in ("number", "integer"):
        return number_limits(schema)
    if schema.get("type") == "string":
        return string_limits(schema)
    raise AssertionError(f"no checked range: {schema}")


def number_limits(schema: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    assert "minimum" in schema and "maximum" in schema, f"a number without both bounds: {schema}"
    low, high = schema["minimum"], schema["maximum"]
    step = 1 if schema["type"] == "integer" else max(abs(low) / 10, 0.001)
    refused: list[Any] = [low - step, high + (1 if schema["type"] == "integer" else high / 100)]
    if schema["type"] == "number":
        refused += ["inf", "nan"]
    return [low, high], [*refused, "soon"]


def string_limits(schema: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    longest = schema.get("maxLength")
    pattern = schema.get("pattern")
    assert longest is not None, f"a string without a maximal length: {schema}"
    assert pattern is not None or schema.get("minLength", 0) >= 1, f"may be empty: {schema}"
    accepted = [LONGEST[pattern](longest) if pattern else "a" * longest]
    refused = ["a" * (longest + 1)]
    if pattern is not None:
        refused.append(OFF_PATTERN.get(pattern, "Not_A.name!"))
    if schema.get("minLength", 0) >= 1:
        refused.append("")
    return accepted, refused


def as_environment(value: Any) -> str:
    return json.dumps(value) if isinstance(value, list) else str(value).lower()


def refusals_of(name: str, error: ValidationError) -> list[Any]:
    return [item for item in error.errors() if item["loc"] and item["loc"][0] == name]


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_refuses_values_beyond_its_range(name: str) -> None:
    for value in limits(SCHEMA[name])[1]:
        with pytest.raises(ValidationError) as raised:
            Settings.from_sources({name: value})
        assert refusals_of(name, raised.value), f"{name}={value!r}"


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_refuses_them_from_the_environment_too(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    for value in limits(SCHEMA[name])[1]:
        monkeypatch.setenv(f"ELASTIC_QUOTA_{name.upper()}", as_environment(value))
        with pytest.raises(ValidationError) as raised:
            Settings.from_sources()
        assert refusals_of(name, raised.value), f"{name}={value!r}"


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_accepts_its_limits(name: str) -> None:
    """At the limit the setting itself is fine (a rule between settings may still object)."""
    for value in limits(SCHEMA[name])[0]:
        try:
            settings = Settings.from_sources({name: value} if value is not None else {})
        except ValidationError as error:
            assert not refusals_of(name, error), f"{name}={value!r}: {error}"
        else:
            assert value is None or getattr(settings, name) == value


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_a_refusal_is_one_line_with_the_setting_the_value_and_the_range(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    value = limits(SCHEMA[name])[1][0]
    variable = f"ELASTIC_QUOTA_{name.upper()}"
    monkeypatch.setenv(variable, as_environment(value))
    with pytest.raises(ValidationError) as raised:
        Settings.from_sources()
    message = invalid_settings_message(raised.value)
    assert "\n" not in message
    assert name in message and f"(from {variable})" in message
    assert allowed_values(name) in message
    where, shown = ("[0]", value[0]) if isinstance(value, list) else ("", value)
    assert f"{name}{where} = '{as_environment(shown)}'" in message


def test_the_range_is_worded_for_people() -> None:
    assert allowed_values("eviction_rate") == "a number from 0.01 to 1000"
    assert allowed_values("metrics_port") == "an integer from 0 to 65535"
    assert allowed_values("log_level") == "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"
    assert allowed_values("dry_run") == "true or false"
    assert allowed_values("lease_namespace").endswith(", or unset")
    assert allowed_values("ignore_namespaces").startswith("a JSON list, each item a DNS label")


def test_a_fractional_eviction_rate_and_any_case_of_a_level_are_accepted() -> None:
    settings = Settings.from_sources({"eviction_rate": 0.2, "log_level": "debug"})
    assert (settings.eviction_rate, settings.log_level) == (0.2, "DEBUG")


def test_a_list_that_is_not_json_is_named_with_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELASTIC_QUOTA_IGNORE_NAMESPACES", "kube-system")
    with pytest.raises(Exception) as raised:  # pydantic-settings' SettingsError
        Settings.from_sources()
    assert invalid_settings_message(raised.value) == (
        "invalid settings: ignore_namespaces = 'kube-system' (from "
        f"ELASTIC_QUOTA_IGNORE_NAMESPACES): allowed: {allowed_values('ignore_namespaces')}"
    )


def test_a_rule_between_settings_is_one_line_too() -> None:
    with pytest.raises(ValidationError) as raised:
        Settings.from_sources({"lease_duration": 2, "lease_retry_period": 1.5})
    assert invalid_settings_message(raised.value) == (
        "invalid settings: lease_retry_period (1.5 s) must be at most half of lease_duration (2 s)"
    )


def test_the_metrics_and_the_webhooks_need_two_ports() -> None:
    with pytest.raises(ValidationError) as raised:
        Settings.from_sources({"metrics_port": 9443, "webhook_port": 9443})
    assert invalid_settings_message(raised.value) == (
        "invalid settings: metrics_port and webhook_port are both 9443: two servers cannot listen "
        "on one port"
    )
    assert Settings.from_sources({"metrics_port": 0, "webhook_port": 0}).webhook_port == 0


def test_run_refuses_a_file_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Checked when the operator starts: a missing kubeconfig was a traceback from the client."""
    (tmp_path / "tls.key").write_text("key")
    missing = str(tmp_path / "nope")
    argv = ["run", "--kubeconfig", missing, "--webhook-cert", missing]
    assert main([*argv, "--webhook-key", str(tmp_path / "tls.key")]) == 2
    assert capsys.readouterr().err == (
        f"error: invalid settings: kubeconfig = {missing!r} (from --kubeconfig): no such file; "
        f"webhook_cert_file = {missing!r} (from --webhook-cert): no such file\n"
    )


def test_run_names_the_flag_of_a_bad_flag_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--reconcile-interval", "soon", "--metrics-port", "70000"]) == 2
    error = capsys.readouterr().err
    assert error == (
        "error: invalid settings: reconcile_interval = 'soon' (from --reconcile-interval): "
        "allowed: a number from 0.01 to 3600; metrics_port = '70000' (from --metrics-port): "
        "allowed: an integer from 0 to 65535\n"
    )


def test_a_choice_argparse_refuses_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--webhook-failure-policy", "Sometimes"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "error: elastic-quota run: argument --webhook-failure-policy: invalid choice: "
        "'Sometimes' (choose from 'Fail', 'Ignore')\n"
    )


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("ELASTIC_QUOTA_EVICTION_RATE", "0", "a number from 0.01 to 1000"),
        ("ELASTIC_QUOTA_RECONCILE_INTERVAL", "1e9", "a number from 0.01 to 3600"),
        ("ELASTIC_QUOTA_LOG_LEVEL", "chatty", "one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    ],
)
def test_the_operator_refuses_a_bad_environment_value_at_start_up(
    variable: str, value: str, words: str
) -> None:
    """``python -m elasticquota run`` as the image runs it: exit 2 at once, one line, no
    traceback (before this, 0 < eviction_rate < 1 started and never evicted)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ELASTIC_QUOTA_")}
    done = subprocess.run(
        [sys.executable, "-m", "elasticquota", "run"],
        env={**environment, variable: value, "KUBECONFIG": os.devnull},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    name = variable.removeprefix("ELASTIC_QUOTA_").lower()
    assert lines[0] == (
        f"error: invalid settings: {name} = {value!r} (from {variable}): allowed: {words}"
    )
    assert "Traceback" not in done.stderr


def test_the_default_user_reaches_the_engine() -> None:
    """``DEFAULT_USER`` is who a pod without identity counts for in the engine's user limits."""
    state = make_state(Settings(identity="test", default_user="anonymous"))
    assert state.engine.settings.default_user == "anonymous"
    assert state.engine.user_limits().default_user == "anonymous"
