"""docs/metrics.md names every metric family the operator exports, and the docs (metrics.md,
alerts.md) name no metric that does not exist."""

from __future__ import annotations

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
