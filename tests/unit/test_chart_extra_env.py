"""``operator.extraEnv`` beside the variables the chart sets: the container has each name once.

An extraEnv entry named like a variable the chart sets (``templates/_env.tpl``) takes the chart's
entry's place, with the user's value or valueFrom: a list holding a name twice is refused by
server-side apply, and kubectl diff and GitOps tools show or flap between its two values, while
Kubernetes would silently keep the last. Entries of other names follow the chart's, in their
order; a name given twice in extraEnv is refused. Rendered with ``helm template`` (``$HELM``, the
pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing without it).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from chart_render import (
    CHART,
    Manifest,
    TemplateError,
    helm_template,
    operator_environment,
    operator_settings,
)

#: Renders whose chart variables differ: each certificate mode, and the webhooks off.
RENDERS: dict[str, dict[str, Any]] = {
    "certificate by the operator": {},
    "certificate by cert-manager": {"webhooks": {"certificate": {"mode": "certManager"}}},
    "certificate from a Secret": {
        "webhooks": {"certificate": {"mode": "secret", "secretName": "my-webhook-tls"}}
    },
    "webhooks off": {"webhooks": {"enabled": False}},
}


def container_env(manifests: list[Manifest]) -> list[Manifest]:
    """The operator container's env list, as rendered (a name twice stays twice)."""
    (deployment,) = [body for body in manifests if body["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env: list[Manifest] = container["env"]
    return env


def names_of(env: list[Manifest]) -> list[str]:
    return [each["name"] for each in env]


def users_entry(index: int, name: str) -> Manifest:
    """A value for one name, a valueFrom for the next: both kinds of entry replace the chart's."""
    if index % 2:
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": "mine", "key": f"k{index}"}}}
    return {"name": name, "value": f"mine-{index}"}


@pytest.mark.parametrize("render", sorted(RENDERS))
def test_an_entry_named_like_the_charts_takes_its_place_with_the_users_value(render: str) -> None:
    chart = names_of(container_env(helm_template(values=RENDERS[render])))
    assert len(chart) == len(set(chart)) and "ELASTIC_QUOTA_LEASE_DURATION" in chart
    # every variable of the chart, in another order than the chart's, then two of other names
    extra = [users_entry(index, name) for index, name in enumerate(reversed(chart))]
    extra += [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}, {"name": "TZ", "value": "UTC"}]
    values = {**RENDERS[render], "operator": {"extraEnv": extra}}
    env = container_env(helm_template(values=values))
    order = [*chart, "HTTPS_PROXY", "TZ"]
    assert names_of(env) == order
    assert env == sorted(extra, key=lambda each: order.index(each["name"]))  # each the user's


def test_the_ci_values_override_reaches_the_operator_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """ci/all-on-values.yaml sets ELASTIC_QUOTA_PROFILE_DEBOUNCE, which the chart sets from
    operator.profileDebounce, through extraEnv: one entry, the user's, read by the operator."""
    values = yaml.safe_load((CHART / "ci" / "all-on-values.yaml").read_text())
    (user,) = [each for each in values["operator"]["extraEnv"] if each["name"].endswith("DEBOUNCE")]
    manifests = helm_template(values=values)
    assert [each for each in container_env(manifests) if each["name"] == user["name"]] == [user]
    settings = operator_settings(operator_environment(manifests), monkeypatch)
    assert settings.profile_debounce == float(user["value"])


def test_a_name_twice_in_extra_env_is_refused() -> None:
    twice = [{"name": "TZ", "value": "UTC"}, {"name": "TZ", "value": "Europe/Paris"}]
    with pytest.raises(TemplateError) as refused:
        helm_template(values={"operator": {"extraEnv": twice}})
    assert "operator.extraEnv names TZ twice" in refused.value.stderr, refused.value.stderr
