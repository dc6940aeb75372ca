"""Settings: every setting's checked range, and the one-line refusal of a value outside it.

Every setting has a checked range (bounds, a pattern, a set of names): the walk over every field
refuses the values just outside it (from the code and from the environment) and accepts the limits
themselves, so a setting added without a range fails here. A refusal is one line naming the
setting, the value, where it came from and the allowed range; so is a rule between settings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import ValidationError

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
