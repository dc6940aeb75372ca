"""What ``helm install`` prints after installing (NOTES.txt) says what the chart renders: the
namespaces the pod webhooks skip are those of the webhook configurations' namespaceSelector.

With helm: ``$HELM``, the pinned one of ``make helm`` in ``.venv/tools``, or on PATH; failing
without it.
"""

from __future__ import annotations

import re

from chart_render import helm_notes, helm_template

VALUES = {
    "operator": {"ignoreNamespaces": ["batch"]},
    "webhooks": {"excludeNamespaces": ["monitoring"]},
}


def skipped_by_the_configurations() -> set[str]:
    kinds = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    found = set()
    for body in helm_template(values=VALUES):
        if body["kind"] not in kinds:
            continue
        for hook in body["webhooks"]:
            for expression in (hook.get("namespaceSelector") or {}).get("matchExpressions", []):
                assert expression["operator"] == "NotIn", expression
                found.add(tuple(expression["values"]))
    (skipped,) = found  # every pod and workload webhook skips the same ones
    return set(skipped)


def test_the_notes_name_every_namespace_the_pod_webhooks_skip() -> None:
    notes = helm_notes(VALUES)
    said = re.search(r"The pod webhooks skip the namespaces (?P<names>[^\n(]+)", notes)
    assert said, notes
    named = {name.strip() for name in said["names"].split(",")}
    assert (
        named
        == skipped_by_the_configurations()
        == {
            "batch",
            "eq-system",
            "kube-system",
            "monitoring",
        }
    )
