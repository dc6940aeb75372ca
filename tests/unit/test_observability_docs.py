"""docs/metrics.md names every metric family the operator exports, and the docs (metrics.md,
alerts.md) name no metric that does not exist; the README's Metrics table names every family
too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from observability_assets import ALERTS_DOC, METRICS_DOC, metric_names, unknown

from elasticquota.controller.metrics import METRIC_NAMES
from elasticquota.controller.webhooks.admission import (
    MUTATE_POD,
    MUTATE_QUOTA,
    VALIDATE_POD,
    VALIDATE_QUOTA,
)
from elasticquota.controller.webhooks.identity import workload_webhooks


def test_metrics_doc_names_every_metric() -> None:
    text = METRICS_DOC.read_text()
    missing = {name for name in METRIC_NAMES if f"`{name}`" not in text}
    assert not missing


@pytest.mark.parametrize("doc", [METRICS_DOC, ALERTS_DOC], ids=lambda path: path.name)
def test_docs_name_only_exported_metrics(doc: Path) -> None:
    assert not unknown(metric_names(doc.read_text()))


def test_metrics_doc_names_every_webhook_label_value() -> None:
    """``elastic_quota_webhook_requests_total{webhook}``: every webhook that counts its answers."""
    row = next(
        line
        for line in METRICS_DOC.read_text().splitlines()
        if line.startswith("| `elastic_quota_webhook_requests_total`")
    )
    webhooks = {VALIDATE_QUOTA, MUTATE_QUOTA, VALIDATE_POD, MUTATE_POD}
    webhooks |= {webhook for _, webhook, _ in workload_webhooks()}
    assert {webhook for webhook in webhooks if f"`{webhook}`" not in row} == set()


README = METRICS_DOC.parents[1] / "README.md"
SHORT = re.compile(r"`(_[a-z0-9_]+)`")
FAMILY_WILDCARD = re.compile(r"`(elastic_quota_[a-z]+)_\*`")


def readme_metric_names() -> set[str]:
    """The families the README's Metrics table names: full names, the ``_max`` shorthand of the
    family named before it in the cell (``elastic_quota_`` + ``max``), and ``elastic_quota_group_*``
    (every family of that prefix)."""
    text = README.read_text()
    start = text.index("## Metrics")
    names: set[str] = set()
    for line in text[start : text.index("\n## ", start + 1)].splitlines():
        if not line.startswith("| `elastic_quota_"):
            continue
        cell = line.split("|")[1]
        prefixes = FAMILY_WILDCARD.findall(cell)
        names |= metric_names(cell) - set(prefixes)
        names |= {f"elastic_quota{short}" for short in SHORT.findall(cell)}
        names |= {name for name in METRIC_NAMES for prefix in prefixes if name.startswith(prefix)}
    return names


def test_the_readmes_metrics_table_names_every_family_and_no_other() -> None:
    names = readme_metric_names()
    assert unknown(names) == set()
    assert METRIC_NAMES - names == set()
