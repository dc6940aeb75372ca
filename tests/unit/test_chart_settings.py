"""The chart's values refuse what the operator's settings refuse.

Each chart value that the Deployment passes as an ``ELASTIC_QUOTA_*`` variable (found in
``templates/_env.tpl``, so a new one is covered without touching this test) has a range in
``values.schema.json`` within the setting's own: numbers have both bounds, inside the setting's;
names have the setting's pattern; choices are a subset of the setting's. So ``helm install`` refuses
a value the operator would refuse at start-up, and helm does refuse one just outside each numeric
range. The rules between settings too: what the Deployment passes on for a value set alone (the
other values at their defaults) starts the operator (``Settings`` accepts it), and helm refuses
the values the operator refuses together, naming them; each case given in a values file and with
``--set`` (its numbers written with a decimal point: text to the chart, compared as numbers). With
helm: ``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing without
it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chart_render import (
    Manifest,
    TemplateError,
    chart_values,
    helm_template,
    operator_environment,
    operator_settings,
    value_schema,
)

from elasticquota.settings import Settings

SETTINGS = Settings.model_json_schema()["properties"]
CHART_VALUES = chart_values()


def kinds(schema: dict[str, Any]) -> set[str]:
    """The JSON types a value may have: ``number`` and ``null`` for a nullable number."""
    kind = schema.get("type", [])
    return {kind} if isinstance(kind, str) else set(kind)


def setting_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = SETTINGS[name]
    if "anyOf" in schema:
        (schema,) = [kind for kind in schema["anyOf"] if kind.get("type") != "null"]
    return schema


def test_the_deployment_passes_the_operators_values_on() -> None:
    assert len(CHART_VALUES) >= 15, CHART_VALUES
    assert CHART_VALUES["operator.evictionRate"] == "eviction_rate"
    assert CHART_VALUES["metrics.port"] == "metrics_port"
    assert set(CHART_VALUES.values()) <= set(SETTINGS)


def check_within(path: str, chart: dict[str, Any], setting: dict[str, Any]) -> None:
    if "enum" in setting:
        assert set(chart.get("enum", [])) <= set(setting["enum"]), path
        assert chart.get("enum"), f"{path}: no choices"
    elif setting.get("type") in ("number", "integer"):
        assert "minimum" in chart and "maximum" in chart, f"{path}: not both bounds"
        assert setting["minimum"] <= chart["minimum"] <= chart["maximum"] <= setting["maximum"]
    elif setting.get("type") == "array":
        check_within(path, chart["items"], setting["items"])
    elif setting.get("type") == "string" and "pattern" in setting:
        assert chart.get("pattern") == setting["pattern"], path
        assert chart.get("maxLength", 10**9) <= setting["maxLength"], path


@pytest.mark.parametrize("path", sorted(CHART_VALUES))
def test_each_values_range_is_within_its_settings(path: str) -> None:
    check_within(path, value_schema(path), setting_schema(CHART_VALUES[path]))


NUMBERS = sorted(path for path in CHART_VALUES if kinds(value_schema(path)) & {"number", "integer"})


def test_nullable_numbers_are_checked_too() -> None:
    assert {"operator.leaseRenewDeadline", "operator.leaseRetryPeriod"} <= set(NUMBERS)


@pytest.mark.parametrize("path", NUMBERS)
def test_helm_refuses_a_number_just_outside_the_range(path: str) -> None:
    schema = value_schema(path)
    below = schema["minimum"] - (1 if "integer" in kinds(schema) else 0.001)
    for value in (below, schema["maximum"] + 1):
        values: Any = value
        for part in reversed(path.split(".")):
            values = {part: values}
        with pytest.raises(TemplateError) as refused:
            helm_template(values=values)  # JSON: the numbers keep their type
        assert path.split(".")[-1] in refused.value.stderr, refused.value.stderr


#: Values a user sets alone, which the chart's other defaults must not contradict.
ACCEPTED: dict[str, dict[str, Any]] = {
    "defaults": {},
    "a short Lease": {"operator": {"leaseDuration": 5}},
    "the shortest Lease": {"operator": {"leaseDuration": 1}},
    "a long Lease": {"operator": {"leaseDuration": 120}},
    "the longest retry": {"operator": {"leaseRetryPeriod": 7.5}},
    "the shortest Lease, retried at its half": {
        "operator": {"leaseDuration": 1, "leaseRetryPeriod": 0.5}
    },
    "a retry below a deadline": {"operator": {"leaseRetryPeriod": 2, "leaseRenewDeadline": 2.5}},
    # as text (--set), "9.5" sorts after "10.5": the chart compares them as numbers
    "a deadline of one digit, a Lease of two": {
        "operator": {"leaseDuration": 10.5, "leaseRenewDeadline": 9.5}
    },
    "short-lived certificates": {
        "webhooks": {"certificate": {"validityDays": 20, "renewBeforeDays": 5}}
    },
    "webhooks off, metrics on their port": {
        "webhooks": {"enabled": False},
        "metrics": {"port": 9443},
    },
}


def set_options(values: dict[str, Any], prefix: str = "") -> list[str]:
    """``values`` as ``--set`` options, each number of the schema's type ``number`` written with
    a decimal point (``15.0``), which helm passes on to the chart as text."""
    options = []
    for key, value in values.items():
        path = prefix + key
        if isinstance(value, dict):
            options += set_options(value, f"{path}.")
        elif "number" in kinds(value_schema(path)):
            options += ["--set", f"{path}={float(value)!r}"]
        else:
            options += ["--set", f"{path}={json.dumps(value)}"]
    return options


def render(values: dict[str, Any], given: str) -> list[Manifest]:
    """The chart rendered with ``values`` given as a values file (numbers typed) or with --set."""
    if given == "--set":
        return helm_template(*set_options(values))
    return helm_template(values=values)


GIVEN = ["values file", "--set"]


@pytest.mark.parametrize("given", GIVEN)
@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_the_operator_accepts_the_settings_the_chart_renders(
    case: str, given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Deployment passes on starts the operator (a refused setting: exit 2, a pod in
    CrashLoopBackOff after a `helm install` that succeeded)."""
    operator_settings(operator_environment(render(ACCEPTED[case], given)), monkeypatch)


#: Values the operator refuses together (``Settings``' rules between settings): helm refuses them
#: first, naming them.
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "one port for both servers": ({"webhooks": {"port": 8080}}, "webhooks.port"),
    "a deadline after the Lease": ({"operator": {"leaseRenewDeadline": 15}}, "leaseRenewDeadline"),
    "a deadline within a retry": ({"operator": {"leaseRenewDeadline": 0.5}}, "leaseRenewDeadline"),
    "a retry over half the Lease": ({"operator": {"leaseRetryPeriod": 7.6}}, "leaseRetryPeriod"),
    "a deadline within a retry set": (
        {"operator": {"leaseRetryPeriod": 2, "leaseRenewDeadline": 2}},
        "leaseRenewDeadline",
    ),
    "a renewal before the start": (
        {"webhooks": {"certificate": {"validityDays": 30}}},
        "renewBeforeDays",
    ),
    "a renewal before the CA's start": (
        {"webhooks": {"certificate": {"caValidityDays": 20}}},
        "renewBeforeDays",
    ),
}


@pytest.mark.parametrize("given", GIVEN)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_helm_refuses_what_the_operator_refuses_together(case: str, given: str) -> None:
    values, named = REFUSED[case]
    with pytest.raises(TemplateError) as refused:
        render(values, given)
    assert named in refused.value.stderr, refused.value.stderr


#: Values that are null by default (the operator's own default, not a copy in the chart), set:
#: the setting each one feeds and what it becomes.
SET: dict[str, tuple[dict[str, Any], str, Any]] = {
    "operator.leaseRetryPeriod": ({"operator": {"leaseRetryPeriod": 2}}, "lease_retry_period", 2),
    "operator.listFromCache": ({"operator": {"listFromCache": False}}, "list_from_cache", False),
    "operator.loopStallReportAfter": (
        {"operator": {"loopStallReportAfter": 0.1}},
        "loop_stall_report_after",
        0.1,
    ),
    "webhooks.address": ({"webhooks": {"address": "10.0.0.7"}}, "webhook_address", "10.0.0.7"),
    "webhooks.certificate.checkInterval": (
        {"webhooks": {"certificate": {"checkInterval": 5}}},
        "webhook_cert_check_interval",
        5,
    ),
}


@pytest.mark.parametrize("path", sorted(SET))
def test_a_value_set_reaches_its_setting_and_unset_leaves_the_operators_default(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    values, setting, expected = SET[path]
    assert CHART_VALUES[path] == setting
    rendered = operator_settings(operator_environment(helm_template(values=values)), monkeypatch)
    assert getattr(rendered, setting) == expected
    default = operator_settings(operator_environment(helm_template(values={})), monkeypatch)
    assert getattr(default, setting) == Settings.model_fields[setting].default


def test_the_charts_unset_retry_period_is_the_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unset leaseRetryPeriod is, for the chart's check of leaseRenewDeadline, the operator's
    default: a deadline at it is refused, one just above starts the operator."""
    retry = Settings.model_fields["lease_retry_period"].default
    with pytest.raises(TemplateError):
        helm_template(values={"operator": {"leaseRenewDeadline": retry}})
    above = helm_template(values={"operator": {"leaseRenewDeadline": retry * 1.01}})
    assert operator_settings(operator_environment(above), monkeypatch).lease_retry_period == retry
