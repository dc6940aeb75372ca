"""``plan``'s problems with the fields a CI job annotates: the object, where it was read, the rule
and how grave it is.

``Finding`` is a ``Problem`` (the table prints it the same way) with a rule id, a source and a
severity. Problems the operator itself reports (the engine's, the parsers') are plain
``Problem``s: their rule is ``operator`` and they are errors (the operator leaves the object out
or counts it otherwise). Severities:

* ``error``: the webhook would refuse the object, or the operator would leave it out or read it
  otherwise than written;
* ``warning``: a field, resource name or key the operator never reads, most likely a typo
  (the API server accepts it, and nothing uses it);
* ``note``: an object of a kind ``plan`` does not read (it has no bearing on quotas).

``--fail-on-problems`` fails on errors and warnings, never on notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from elasticquota.core.model.models import Problem

ERROR: Final = "error"
WARNING: Final = "warning"
NOTE: Final = "note"
#: The severities ``--fail-on-problems`` fails on.
FAILING: Final = frozenset({ERROR, WARNING})


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an object was read: the file, the 0-based position of its YAML document in it and
    the 1-based line the document starts on (the items of a ``List`` share their list's place; a
    JSON file is document 0 at line 1)."""

    file: str
    document: int
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Finding(Problem):
    """A problem with its rule id, its source and its severity."""

    rule: str = ""
    source: str = "operator"
    """``webhook`` (a rule the admission webhooks apply), ``schema`` (fields, resource names and
    keys), ``input`` (the files themselves), ``operator`` (what the engine reports)."""
    severity: str = ERROR


def object_ref(kind: str, namespace: str, name: str) -> str:
    """How problems name an object: ``ElasticQuota team/q`` (cluster-scoped: ``Node /n1``)."""
    return f"{kind} {namespace}/{name}"


def split_ref(ref: str) -> tuple[str, str, str]:
    """``Kind namespace/name`` back into its parts; ``("", "", "")`` for anything else (a
    document without a kind is named by its file)."""
    kind, _, rest = ref.partition(" ")
    namespace, slash, name = rest.partition("/")
    if not kind or not slash or not kind[:1].isupper() or " " in kind:
        return "", "", ""
    return kind, namespace, name


def severity_of(problem: Problem) -> str:
    return problem.severity if isinstance(problem, Finding) else ERROR


def failing(problems: list[Problem]) -> list[Problem]:
    """The problems ``--fail-on-problems`` fails on (errors and warnings)."""
    return [problem for problem in problems if severity_of(problem) in FAILING]


def problem_line(problem: Problem) -> str:
    """The table's line: ``Kind namespace/name: message``, then ``[rule]`` for a finding, with
    its severity when it is not an error (``[unknown-field, warning]``)."""
    line = f"{problem.object}: {problem.message}"
    if not isinstance(problem, Finding):
        return line
    severity = "" if problem.severity == ERROR else f", {problem.severity}"
    return f"{line} [{problem.rule}{severity}]"


def problem_entry(problem: Problem, origins: dict[tuple[str, str, str], Origin]) -> dict[str, Any]:
    """One entry of the JSON ``problems`` list (a stable contract, docs/plan.md)."""
    kind, namespace, name = split_ref(problem.object)
    origin = origins.get((kind, namespace, name)) or (
        problem.origin if isinstance(problem, InputFinding) else None
    )
    finding = problem if isinstance(problem, Finding) else None
    return {
        "object": problem.object,
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "file": origin.file if origin else None,
        "document": origin.document if origin else None,
        "line": origin.line if origin else None,
        "rule": finding.rule if finding else "operator",
        "source": finding.source if finding else "operator",
        "severity": severity_of(problem),
        "message": problem.message,
    }


@dataclass(frozen=True, slots=True)
class InputFinding(Finding):
    """A finding about a document rather than an object (it has no kind or name to look up)."""

    origin: Origin | None = None
