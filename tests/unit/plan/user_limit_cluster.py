"""The cluster of seed 004's design example as manifests for ``plan`` and ``usage``
(``test_user_limits``, ``test_usage``): pods of users and groups in quota ``team`` under its
limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from userlimits_examples import seed_limits

from elasticquota.core.keys import ANNO_USER_INFO, ANNO_USER_LIMITS, POD_LABEL_APPLICATION

if TYPE_CHECKING:
    from conftest import K8s, Writer

#: Seed 004's design example, in Gi here for round figures in the output.
SEED = seed_limits("Gi")


def user_pod(
    k8s: type[K8s],
    name: str,
    user: str,
    groups: list[str],
    cpu: str,
    memory: str,
    running: bool = True,
    app: str | None = None,
) -> dict[str, Any]:
    raw = k8s.pod(
        name,
        "team",
        {"cpu": cpu, "memory": memory},
        node="n1" if running else "",
        labels={POD_LABEL_APPLICATION: app} if app else None,
    )
    raw["metadata"]["annotations"] = {ANNO_USER_INFO: json.dumps({"user": user, "groups": groups})}
    return raw


def seed_cluster(k8s: type[K8s], write: Writer, limits: str = SEED) -> Path:
    team = k8s.quota(
        "team",
        {"cpu": "100", "memory": "1000Gi"},
        {"cpu": "100", "memory": "1000Gi"},
        annotations={ANNO_USER_LIMITS: limits},
    )
    pods = [
        user_pod(k8s, "sue-1", "sue", ["test", "development"], "4", "20Gi", app="sweep"),
        user_pod(k8s, "sue-2", "sue", ["test", "development"], "2", "1Gi", running=False),
        user_pod(k8s, "bob-1", "bob", ["ops"], "1", "5Gi"),
        user_pod(k8s, "bob-2", "bob", ["ops"], "1", "1Gi", running=False),
        *(user_pod(k8s, f"intern-{n}", f"intern{n}", ["interns"], "1", "10Gi") for n in range(4)),
        user_pod(k8s, "intern-new", "intern9", ["interns"], "500m", "6Gi", running=False),
        user_pod(k8s, "tess-1", "tess", ["test"], "500m", "1Gi", running=False),
    ]
    return write(k8s.node("n1", {"cpu": "200", "memory": "2000Gi"}), team, *pods)
