"""Reading manifests: files and directories, multi-document YAML, JSON, List kinds, skipped kinds,
problems for documents that are not objects, and errors only for unreadable input."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from elasticquota.plan.findings import Origin
from elasticquota.plan.loader import UnreadableInputError, load_paths

if TYPE_CHECKING:
    from conftest import K8s, Writer


NO_NAME = "no metadata.name; skipped: plan reads objects by name"


def names(objects: list[dict[str, object]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]  # type: ignore[index]


def test_a_multi_document_yaml_file_is_sorted_into_kinds(k8s: type[K8s], write: Writer) -> None:
    path = write(
        k8s.quota("team", max={"cpu": "4"}),
        k8s.pod("p", "team", {"cpu": "1"}),
        k8s.node("n1", {"cpu": "8"}),
        k8s.profile("pool", "gpu", quota_name="gpu-root", match_labels={"pool": "gpu"}),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
    )
    manifests = load_paths([path])
    assert names(manifests.quotas) == ["team"]
    assert names(manifests.pods) == ["p"]
    assert names(manifests.nodes) == ["n1"]
    assert names(manifests.profiles) == ["pool"]
    assert names(manifests.namespaces) == ["team"]
    assert manifests.skipped == []
    assert manifests.problems == []


def test_empty_documents_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("---\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n")
    manifests = load_paths([path])
    assert names(manifests.nodes) == ["n1"]
    assert manifests.problems == []


def test_a_json_file_is_read(tmp_path: Path, k8s: type[K8s]) -> None:
    path = tmp_path / "node.json"
    path.write_text(json.dumps(k8s.node("n1", {"cpu": 8})))
    assert names(load_paths([path]).nodes) == ["n1"]


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize(
    ("mark", "encoding"),
    [
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ],
    ids=["utf-8", "utf-16-le", "utf-16-be"],
)
def test_a_file_with_a_byte_order_mark_is_read_as_kubectl_reads_it(
    tmp_path: Path, k8s: type[K8s], suffix: str, mark: bytes, encoding: str
) -> None:
    path = tmp_path / f"node{suffix}"
    path.write_bytes(mark + json.dumps(k8s.node("n1", {"cpu": 8})).encode(encoding))
    manifests = load_paths([path])
    assert names(manifests.nodes) == ["n1"]
    assert manifests.problems == []


def test_a_directory_is_read_recursively_in_name_order(
    tmp_path: Path, k8s: type[K8s], write: Writer
) -> None:
    write(k8s.node("b", {"cpu": "1"}), name="b.yaml")
    write(k8s.node("a", {"cpu": "1"}), name="sub/deeper/a.yml")
    (tmp_path / "c.json").write_text(json.dumps(k8s.node("c", {"cpu": "1"})))
    (tmp_path / "notes.txt").write_text("not: [a manifest")
    (tmp_path / "README.md").write_text("# docs")
    manifests = load_paths([tmp_path])
    # Sorted by path: b.yaml, c.json, sub/deeper/a.yml; other suffixes are not read.
    assert names(manifests.nodes) == ["b", "c", "a"]


def test_several_paths_are_read_in_the_order_given(k8s: type[K8s], write: Writer) -> None:
    second = write(k8s.node("second", {"cpu": "1"}), name="x.yaml")
    first = write(k8s.node("first", {"cpu": "1"}), name="y.yaml")
    assert names(load_paths([first, second]).nodes) == ["first", "second"]


def test_a_list_kind_yields_its_items(k8s: type[K8s], write: Writer) -> None:
    path = write(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [k8s.node("n1", {"cpu": "1"}), k8s.pod("p", "ns", {"cpu": "1"})],
        }
    )
    manifests = load_paths([path])
    assert names(manifests.nodes) == ["n1"]
    assert names(manifests.pods) == ["p"]


def test_a_typed_list_kind_and_nested_lists_yield_their_items(
    k8s: type[K8s], write: Writer
) -> None:
    inner = {"apiVersion": "v1", "kind": "PodList", "items": [k8s.pod("p2", "ns")]}
    path = write({"apiVersion": "v1", "kind": "PodList", "items": [k8s.pod("p1", "ns"), inner]})
    assert names(load_paths([path]).pods) == ["p1", "p2"]


def test_an_empty_list_yields_nothing(write: Writer) -> None:
    manifests = load_paths([write({"apiVersion": "v1", "kind": "List", "items": []})])
    assert (manifests.pods, manifests.problems, manifests.skipped) == ([], [], [])


@pytest.mark.parametrize(
    "api_version", ["scheduling.sigs.k8s.io/v1alpha1", "scheduling.x-k8s.io/v1alpha1"]
)
def test_both_elastic_quota_groups_are_read(
    api_version: str, k8s: type[K8s], write: Writer
) -> None:
    path = write(k8s.quota("team", api_version=api_version))
    assert names(load_paths([path]).quotas) == ["team"]


def test_other_kinds_are_skipped_with_a_note(k8s: type[K8s], write: Writer) -> None:
    path = write(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
        {"apiVersion": "example.com/v1", "kind": "ElasticQuota", "metadata": {"name": "fake"}},
        {"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "odd"}},
        k8s.node("n1", {"cpu": "1"}),
    )
    manifests = load_paths([path])
    assert manifests.skipped == [
        f"apps/v1 Deployment web ({path})",
        f"example.com/v1 ElasticQuota fake ({path})",
        f"apps/v1 Pod odd ({path})",
    ]
    assert manifests.quotas == []
    assert names(manifests.nodes) == ["n1"]
    # a kind plan reads in another group is a warning too (a typo would skip a quota unseen)
    assert [(p.object, getattr(p, "severity", "")) for p in manifests.problems] == [
        ("ElasticQuota /fake", "warning"),
        ("Pod /odd", "warning"),
    ]
    assert [p.object for p in manifests.notes] == ["Deployment /web"]


def test_a_skipped_object_with_odd_metadata_is_still_just_skipped(write: Writer) -> None:
    manifests = load_paths([write({"apiVersion": "v1", "kind": "Secret", "metadata": ["x"]})])
    assert len(manifests.skipped) == 1
    assert "Secret <unnamed>" in manifests.skipped[0]


@pytest.mark.parametrize(
    "document",
    [
        {"apiVersion": "v1", "metadata": {"name": "no-kind"}},
        {"apiVersion": "v1", "kind": "", "metadata": {"name": "empty-kind"}},
        ["a", "list", "document"],
        "just a string",
        42,
    ],
)
def test_a_document_that_is_not_an_object_with_a_kind_is_a_problem(
    document: object, write: Writer, k8s: type[K8s]
) -> None:
    path = write(document, k8s.node("n1", {"cpu": "1"}))
    manifests = load_paths([path])
    assert [(p.object, p.message) for p in manifests.problems] == [
        (f"document in {path}", "not a Kubernetes object (no kind); skipped")
    ]
    assert names(manifests.nodes) == ["n1"]


def test_objects_without_a_name_are_problems_at_their_place_and_left_out(tmp_path: Path) -> None:
    path = tmp_path / "unnamed.yaml"
    path.write_text(
        "kind: ElasticQuota\napiVersion: scheduling.sigs.k8s.io/v1alpha1\n"
        "metadata: {namespace: team}\n---\n"
        "kind: ElasticQuota\napiVersion: scheduling.sigs.k8s.io/v1alpha1\n"
        "metadata: {namespace: team}\n---\n"
        "kind: Pod\napiVersion: v1\nmetadata: {generateName: web-}\n"
    )
    manifests = load_paths([path])
    assert (manifests.quotas, manifests.pods) == ([], [])
    found = [(p.object, p.rule, p.origin, p.message) for p in manifests.problems]  # type: ignore[attr-defined]
    assert found == [
        ("ElasticQuota team/<unnamed>", "no-name", Origin(str(path), 0, 1), NO_NAME),
        ("ElasticQuota team/<unnamed>", "no-name", Origin(str(path), 1, 5), NO_NAME),
        (
            "Pod /<unnamed>",
            "no-name",
            Origin(str(path), 2, 9),
            "only metadata.generateName, which the API server completes at creation; "
            "skipped: plan reads objects by name",
        ),
    ]


def test_list_items_that_are_not_a_list_are_problems_not_a_crash(write: Writer) -> None:
    manifests = load_paths([write({"apiVersion": "v1", "kind": "List", "items": 5})])
    assert len(manifests.problems) == 1
    assert manifests.problems[0].message == "not a Kubernetes object (no kind); skipped"


def test_unquoted_yaml_timestamps_stay_text_as_kubectl_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\n"
        "metadata: {name: p, namespace: ns, creationTimestamp: 2026-11-20T08:00:00Z}\n"
        "status: {phase: Running, startTime: 2026-11-20T08:00:00Z}\n"
    )
    (pod,) = load_paths([path]).pods
    assert pod["metadata"]["creationTimestamp"] == "2026-11-20T08:00:00Z"
    assert pod["status"]["startTime"] == "2026-11-20T08:00:00Z"


def test_a_missing_path_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableInputError, match="no such file or directory"):
        load_paths([tmp_path / "missing.yaml"])


def test_a_directory_without_a_manifest_file_is_unreadable(tmp_path: Path) -> None:
    """As kubectl's "recognized file extensions are [.json .yaml .yml]": a mistyped directory
    must not read as a plan of nothing."""
    (tmp_path / "notes.txt").write_text("kind: ElasticQuota\n", encoding="utf-8")
    with pytest.raises(UnreadableInputError) as raised:
        load_paths([tmp_path])
    assert (
        str(raised.value) == f"{tmp_path}: a directory with no manifest file (.yaml, .yml, .json)"
    )


def test_files_of_no_object_at_all_are_unreadable(tmp_path: Path) -> None:
    """kubectl's "no objects passed": empty files, or only empty documents."""
    empty, blank = tmp_path / "empty.yaml", tmp_path / "blank.yaml"
    empty.write_text("", encoding="utf-8")
    blank.write_text("---\n# nothing\n---\n", encoding="utf-8")
    with pytest.raises(UnreadableInputError) as raised:
        load_paths([empty, blank])
    assert str(raised.value) == f"no objects in {empty}, {blank}"
    quota = tmp_path / "quota.yaml"
    quota.write_text(
        "apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: ElasticQuota\n"
        "metadata: {name: team, namespace: ns}\n",
        encoding="utf-8",
    )
    assert len(load_paths([empty, quota]).quotas) == 1  # one object is enough


@pytest.mark.parametrize(
    ("name", "text", "what"),
    [
        ("broken.yaml", "kind: Node\nmetadata: {name: [unclosed\n", "not valid YAML"),
        ("broken.json", '{"kind": "Node",', "not valid JSON"),
        ("huge.json", '{"kind": "Node", "n": ' + "9" * 5000 + "}", "not valid JSON"),
    ],
)
def test_a_file_that_does_not_parse_is_unreadable_and_named(
    tmp_path: Path, name: str, text: str, what: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UnreadableInputError) as raised:
        load_paths([path])
    assert str(raised.value).startswith(f"{path}: {what}")


def test_a_file_that_is_not_utf8_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00kind")
    with pytest.raises(UnreadableInputError, match=str(path)):
        load_paths([path])


def test_the_bundled_examples_load_without_problems(examples: Path) -> None:
    manifests = load_paths([examples])
    assert len(manifests.quotas) == 8
    assert len(manifests.profiles) == 1
    assert len(manifests.nodes) == 6
    assert len(manifests.pods) == 13
    assert len(manifests.namespaces) == 6
    assert (manifests.skipped, manifests.problems) == ([], [])


def test_each_object_is_placed_by_document_and_line(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "---\n# an empty document follows\n---\n---\n# node\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n\n"
        "apiVersion: v1\nkind: List\n"
        "items:\n- {apiVersion: v1, kind: Node, metadata: {name: n2}}\n",
        encoding="utf-8",
    )
    origins = load_paths([path]).origins
    assert origins[("Node", "", "n1")] == Origin(str(path), 2, 6)  # the empty ones counted
    assert origins[("Node", "", "n2")] == Origin(str(path), 3, 11)  # a List's items: its place
