"""Every chart value that is a number takes a decimal from ``helm --set`` too.

``--set`` types integers, booleans and null only (helm's ``strvals.typedVal``, 3.6 to the latest
3.x): ``--set operator.reconcileInterval=0.5`` gives the string "0.5", which a schema of type
``number`` refused, so a fraction of a second could only be set with ``-f``. Each number of
``values.schema.json`` (found there, so a new one is covered without touching this test) now also
takes a decimal string, which the chart compares with the number's range and passes on as
written. For each one, given with ``--set``: a decimal within the range renders and reaches what
it sets (the operator's setting, parsed from the rendered environment, or the alert rule it
times); the range's bounds pass the range check and a decimal just outside either one is refused
naming the value; text that is not a number is refused naming the value. With helm (``$HELM``,
the pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing without it).
"""

from __future__ import annotations

from typing import Any

import chart_render
import pytest
from chart_render import TemplateError, helm_template, value_schema


def number_paths(schema: dict[str, Any], prefix: str = "") -> list[str]:
    """The paths of the values whose schema type includes ``number``."""
    found = []
    for key, part in schema.get("properties", {}).items():
        kind = part.get("type", [])
        if "number" in ([kind] if isinstance(kind, str) else kind):
            found.append(prefix + key)
        found += number_paths(part, f"{prefix}{key}.")
    return found


NUMBERS = number_paths(chart_render.values_schema())
CHART_VALUES = chart_render.chart_values()

#: A decimal within each number's range that the rules between values (the Lease's) accept with
#: the other values at their defaults.
WITHIN: dict[str, str] = {
    "operator.loopStallReportAfter": "0.25",
    "operator.reconcileInterval": "0.5",
    "operator.profileDebounce": "2.5",
    "operator.revocationDelay": "90.5",
    "operator.revocationInterval": "0.25",
    "operator.revocationMinRuntime": "60.5",
    "operator.preemptionMinRuntime": "30.5",
    "operator.evictionRate": "0.2",
    "operator.leaseDuration": "7.5",
    "operator.leaseRenewDeadline": "9.5",
    "operator.leaseRetryPeriod": "0.25",
    "operator.apiTimeout": "2.5",
    "metrics.prometheusRule.overRuntimeMarginSeconds": "30.5",
    "metrics.prometheusRule.userLimitHoldingSeconds": "600.5",
    "webhooks.certificate.checkInterval": "1.5",
}

#: The values the Deployment does not pass on: the alert each one times and its rendered ``for``
#: (whole seconds, rounded up; the over-runtime alert waits operator.revocationDelay, 120, too).
ALERT_FOR: dict[str, tuple[str, str]] = {
    "metrics.prometheusRule.overRuntimeMarginSeconds": ("ElasticQuotaOverRuntime", "151s"),
    "metrics.prometheusRule.userLimitHoldingSeconds": ("ElasticQuotaUserLimitHolding", "601s"),
}


def decimal(number: float) -> str:
    """``number`` as text with a decimal point (``60.0``), which ``--set`` leaves a string."""
    return repr(float(number))


def test_every_number_has_a_decimal_and_a_place_it_reaches() -> None:
    assert len(NUMBERS) >= 13, NUMBERS
    assert sorted(WITHIN) == sorted(NUMBERS)
    assert set(NUMBERS) <= set(CHART_VALUES) | set(ALERT_FOR)
    for path, text in WITHIN.items():
        schema = value_schema(path)
        assert "." in text and schema["minimum"] < float(text), path
        assert float(text) < schema.get("maximum", float("inf")), path


@pytest.mark.parametrize("path", sorted(set(WITHIN) & set(CHART_VALUES)))
def test_a_decimal_set_reaches_the_operators_setting(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = WITHIN[path]
    environment = chart_render.operator_environment(helm_template("--set", f"{path}={text}"))
    assert environment[f"ELASTIC_QUOTA_{CHART_VALUES[path].upper()}"] == text  # as written
    settings = chart_render.operator_settings(environment, monkeypatch)
    assert getattr(settings, CHART_VALUES[path]) == float(text)


@pytest.mark.parametrize("path", sorted(ALERT_FOR))
def test_a_decimal_set_times_its_alert(path: str) -> None:
    alert, waits = ALERT_FOR[path]
    (rule,) = helm_template(
        "--show-only",
        "templates/prometheusrule.yaml",
        "--set",
        f"metrics.prometheusRule.enabled=true,{path}={WITHIN[path]}",
    )
    rendered = {each["alert"]: each for group in rule["spec"]["groups"] for each in group["rules"]}
    assert rendered[alert]["for"] == waits


def test_the_over_runtime_alert_waits_out_the_minimum_runtime_too() -> None:
    """Young pods are spared that long: the over-use may last the delay plus it (rounded up)."""
    (rule,) = helm_template(
        "--show-only",
        "templates/prometheusrule.yaml",
        "--set",
        "metrics.prometheusRule.enabled=true,operator.revocationMinRuntime=600.5",
    )
    rendered = {each["alert"]: each for group in rule["spec"]["groups"] for each in group["rules"]}
    assert rendered["ElasticQuotaOverRuntime"]["for"] == "1021s"  # 120 + 601 + 300


def bounds(path: str) -> list[float]:
    schema = value_schema(path)
    return [schema["minimum"], *([schema["maximum"]] if "maximum" in schema else [])]


@pytest.mark.parametrize("path", NUMBERS)
def test_a_decimal_just_outside_the_range_is_refused_naming_the_value(path: str) -> None:
    minimum, *maximum = bounds(path)
    for text in [f"{minimum - 0.001:.3f}", *(decimal(bound + 0.5) for bound in maximum)]:
        with pytest.raises(TemplateError) as refused:
            helm_template("--set", f"{path}={text}")
        assert f"{path} {text} is " in refused.value.stderr, refused.value.stderr


@pytest.mark.parametrize("path", NUMBERS)
def test_the_bounds_pass_the_range_check(path: str) -> None:
    """A bound as a decimal string: rendered, or refused by a rule between values (a renew
    deadline of 0.01 s is not above the retry period), never for its range."""
    for text in map(decimal, bounds(path)):
        try:
            helm_template("--set", f"{path}={text}")
        except TemplateError as refused:
            assert "its minimum" not in refused.stderr and "its maximum" not in refused.stderr
            assert "must be" in refused.stderr, refused.stderr


@pytest.mark.parametrize("path", NUMBERS)
def test_text_that_is_not_a_number_is_refused_naming_the_value(path: str) -> None:
    for text in ("abc", "0.5s", "", "1.2.3"):
        with pytest.raises(TemplateError) as refused:
            helm_template("--set", f"{path}={text}")
        assert f"- {path}: " in refused.value.stderr, refused.value.stderr
