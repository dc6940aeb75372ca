"""What the API server accepts and nothing reads: unknown fields (against the CRDs in ``crds/``),
unknown resource names and this project's label and annotation keys misspelt, each a warning
naming the object, the rule and the closest valid name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from elasticquota.core import keys
from elasticquota.plan.lint import (
    FIELDS,
    KNOWN_KEYS,
    OBJECT_META,
    is_resource_name,
    object_findings,
    schema_fields,
)

if TYPE_CHECKING:
    from conftest import K8s

CRDS = Path(__file__).resolve().parents[3] / "crds"
CPU = {"cpu": "1"}


def messages(kind: str, raw: dict[str, Any]) -> list[tuple[str, str]]:
    found = object_findings(kind, raw)
    assert all(f.severity == "warning" and f.source == "schema" for f in found)
    return [(f.rule, f.message) for f in found]


@pytest.mark.parametrize("file", ["elasticquotas.yaml", "elasticquotaprofiles.yaml"])
def test_the_known_fields_are_the_crds(file: str) -> None:
    crd = yaml.safe_load((CRDS / file).read_text(encoding="utf-8"))
    kind = crd["spec"]["names"]["kind"]
    for version in crd["spec"]["versions"]:
        fields = schema_fields(version["schema"]["openAPIV3Schema"])
        assert fields is not None
        assert fields["metadata"] is None  # the CRD leaves ObjectMeta open ...
        assert FIELDS[kind] == {**fields, "metadata": OBJECT_META}  # ... plan knows its fields


def test_an_unknown_spec_field_is_named_with_the_closest_one(k8s: type[K8s]) -> None:
    quota = k8s.quota("a", max=CPU)
    quota["spec"]["mni"] = CPU
    quota["sepc"] = {}
    schema = "not in the ElasticQuota schema"
    assert messages("ElasticQuota", quota) == [
        ("unknown-field", f"unknown field spec.mni: {schema}; did you mean min?"),
        ("unknown-field", f"unknown field sepc: {schema}; did you mean spec?"),
    ]


def test_unknown_metadata_and_profile_fields_are_reported(k8s: type[K8s]) -> None:
    profile = k8s.profile("gpu", "pools", quota_name="gpu-root", match_labels={"pool": "gpu"})
    profile["metadata"]["lables"] = {}
    profile["spec"]["nodeSelector"]["matchExpressions"] = [
        {"key": "pool", "operator": "In", "value": ["gpu"]}
    ]
    assert messages("ElasticQuotaProfile", profile) == [
        ("unknown-field", "unknown field metadata.lables: not in the ElasticQuotaProfile schema; "
         "did you mean labels?"),
        ("unknown-field", "unknown field spec.nodeSelector.matchExpressions.value: not in the "
         "ElasticQuotaProfile schema; did you mean values?"),
    ]  # fmt: skip


def test_what_a_schema_leaves_open_is_not_checked(k8s: type[K8s]) -> None:
    quota = k8s.quota("a", max=CPU, labels={"app": "x"}, annotations={"note": "y"})
    quota["metadata"]["ownerReferences"] = [{"whatever": 1}]
    quota["status"] = {"used": {"cpu": "1"}}
    assert messages("ElasticQuota", quota) == []


@pytest.mark.parametrize(
    "name",
    [
        "cpu",
        "memory",
        "ephemeral-storage",
        "pods",
        "hugepages-2Mi",
        "requests.cpu",
        "limits.memory",
        "nvidia.com/gpu",
        "kubernetes.io/batch-cpu",
    ],
)
def test_known_resource_names(name: str) -> None:
    assert is_resource_name(name)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("cpus", "did you mean cpu?"),
        ("memroy", "did you mean memory?"),
        ("gpu", "did you mean nvidia.com/gpu?"),
        ("requests.cpus", "did you mean requests.cpu?"),
        ("licenses", "an extended resource needs a domain, e.g. example.com/licenses"),
    ],
)
def test_an_unknown_resource_name_is_a_warning_with_a_hint(
    k8s: type[K8s], name: str, hint: str
) -> None:
    assert not is_resource_name(name)
    ((rule, message),) = messages("ElasticQuota", k8s.quota("a", max={name: "1"}))
    assert rule == "resource-name"
    assert message.startswith(f"unknown resource name {name!r} in spec.max: {hint} (a resource is")


def test_a_misspelt_label_gets_the_closest_key(k8s: type[K8s]) -> None:
    typo = f"{keys.PREFIX}/is-parnet"
    quota = k8s.quota("a", max=CPU, labels={typo: "true"})
    assert messages("ElasticQuota", quota) == [
        ("unknown-label", f"unknown label key {typo} in metadata.labels: did you mean "
         f"{keys.LABEL_IS_PARENT}?"),
    ]  # fmt: skip


def test_a_misspelt_prefix_is_ours_too(k8s: type[K8s]) -> None:
    typo = "quota.scheduling.koordinator.io/parent"
    ((rule, message),) = messages("ElasticQuota", k8s.quota("a", max=CPU, labels={typo: "p"}))
    assert (rule, message) == (
        "unknown-label",
        f"unknown label key {typo} in metadata.labels: did you mean {keys.LABEL_PARENT}?",
    )


def test_an_annotation_written_as_a_label_says_where_it_is_read(k8s: type[K8s]) -> None:
    quota = k8s.quota("a", max=CPU, labels={keys.ANNO_NAMESPACES: "x"})
    assert messages("ElasticQuota", quota) == [
        ("unknown-label", f"unknown label key {keys.ANNO_NAMESPACES} in metadata.labels: it is "
         "read in ElasticQuota annotations only"),
    ]  # fmt: skip


def test_pod_and_profile_keys(k8s: type[K8s]) -> None:
    pod = k8s.pod("w", "team", CPU, labels={f"{keys.PREFIX}/nmae": "team"})
    assert messages("Pod", pod) == [
        ("unknown-label", f"unknown label key {keys.PREFIX}/nmae in metadata.labels: did you mean "
         f"{keys.POD_LABEL_QUOTA}?"),
    ]  # fmt: skip
    profile = k8s.profile(
        "gpu",
        "pools",
        quota_name="gpu-root",
        match_labels={"pool": "gpu"},
        quota_labels={f"{keys.PREFIX}/isparent": "true"},
    )
    assert messages("ElasticQuotaProfile", profile) == [
        ("unknown-label", f"unknown label key {keys.PREFIX}/isparent in spec.quotaLabels: did you "
         f"mean {keys.LABEL_IS_PARENT}?"),
    ]  # fmt: skip


def test_keys_of_other_projects_are_not_ours_to_judge(k8s: type[K8s]) -> None:
    labels = {"app.kubernetes.io/name": "x", "team": "y", "koordinator.sh/qos": "LS"}
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    assert (
        messages("ElasticQuota", k8s.quota("a", max=CPU, labels=labels, annotations=annotations))
        == []
    )


def test_every_key_of_the_project_is_known_somewhere() -> None:
    known = {key for names in KNOWN_KEYS.values() for key in names}
    ours = {
        value
        for name, value in vars(keys).items()
        if name.startswith(("LABEL_", "ANNO_", "POD_LABEL_"))
        and isinstance(value, str)
        and value.startswith((keys.PREFIX, keys.EXT_PREFIX))
    }
    assert ours - known == set()


def test_plan_reports_them_as_warnings_with_the_file(
    plan_json: Any, k8s: type[K8s], write: Any
) -> None:
    path = write(k8s.quota("a", max={"cpus": "1"}))
    (entry,) = plan_json(path)["problems"]
    assert {key: entry[key] for key in ("kind", "name", "rule", "source", "severity", "file")} == {
        "kind": "ElasticQuota",
        "name": "a",
        "rule": "resource-name",
        "source": "schema",
        "severity": "warning",
        "file": str(path),
    }
