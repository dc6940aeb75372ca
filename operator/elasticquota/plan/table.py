"""The ``plan``, ``tree`` and demo table: quota trees drawn with indentation, one row per resource.

Fits a 100-column terminal: the quota column is 30 wide (names indented two spaces per level and cut
with "…" when too long), numbers 10 wide each. The cells are for people, not for the API: cpu is in
cores with up to three decimals (``28.571``, ``40``, ``0.5``; never ``28571m``), amounts of bytes
(memory, ephemeral-storage, storage, huge pages) in binary suffixes (``4Gi``, where the API's
canonical form of ephemeral-storage is ``4294967296``), other resources as Kubernetes writes them;
the lines of text under the trees (pending pods, usage) give bytes exactly, with the suffix that
writes them so (``25G`` where a cell shows ``~23.3Gi``).
A value at or above the operator's "no limit" ceiling (an unset max, a profile root's huge max)
shows as ``-``, as an absent one does. Quantities are printed exactly when they fit and rounded
with a "~" otherwise. A used figure above the runtime is flagged with "!". A profile's tree is
titled with the profile's name and its id cut short (the full id is in ``plan -o json`` and on the
quotas' ``tree-id`` label).

``--users`` shows the user and group limits instead: one row per user (group) and quota, with the
running applications (of ``maxapplications``) and per resource the usage of the limit in force
(``-``: not limited; ``!``: above it, left by a limit lowered after the fact).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator

from elasticquota.core.decisions.admission import Verdict
from elasticquota.core.decisions.budgets import refused_evictions
from elasticquota.core.decisions.minruntime import moment_text
from elasticquota.core.keys import DEFAULT_QUOTA, DEFAULT_TREE, ROOT_QUOTA, SYSTEM_QUOTA
from elasticquota.core.model.models import PodInfo
from elasticquota.core.quantities.quantity import (
    CPU,
    counts_bytes,
    format_binary,
    format_quantity,
    format_units,
    is_unlimited,
)
from elasticquota.core.solve.results import QuotaResult, Snapshot
from elasticquota.core.userlimits.limits import PODS
from elasticquota.core.userlimits.records import SubjectUsage
from elasticquota.plan.compute import Plan
from elasticquota.plan.findings import problem_line

WIDTH = 100
NAME_WIDTH = 30
RESOURCE_WIDTH = 18
CELL_WIDTH = 9
COLUMNS = ("MIN", "MAX", "REQUEST", "USED", "RUNTIME")
#: A generated tree id (FNV-1a in decimal, up to 20 digits) longer than ``TREE_ID_WIDTH`` is shown
#: as its first ``TREE_ID_SHOWN`` digits and "…" in a profile tree's title.
TREE_ID_WIDTH = 6
TREE_ID_SHOWN = 4

_DECIMAL = ((10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))
_BINARY = ((2**60, "Ei"), (2**50, "Pi"), (2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki"))


def cores(millicores: int) -> str:
    """Millicores as cores, exact, with up to three decimals: ``28.571``, ``40``, ``0.5``."""
    whole, milli = divmod(abs(millicores), 1000)
    sign = "-" if millicores < 0 else ""
    return f"{sign}{whole}" + (f".{milli:03d}".rstrip("0") if milli else "")


def readable(resource: str, units: int) -> str:
    """A quantity exactly, in the lines of text (pending pods, usage): cpu in cores, the rest as
    messages quote it (``format_quantity``: bytes with the suffix that writes them exactly,
    ``4Gi``, ``25G``; never a count of bytes such as ``25000000000``)."""
    return cores(units) if resource == CPU else format_quantity(resource, units)


def cell(resource: str, units: int | None) -> str:
    """A quantity that fits a cell: "-" when absent or unlimited, exact when short enough (cpu in
    cores, bytes in binary suffixes, the rest in Kubernetes' form), else approximated with "~"."""
    if units is None or is_unlimited(resource, units):
        return "-"
    if resource == CPU:
        exact = cores(units)
    else:
        exact = format_binary(units) if counts_bytes(resource) else format_units(resource, units)
    if len(exact) <= CELL_WIDTH:
        return exact
    value = units / 1000 if resource == CPU else float(units)
    for factor, suffix in _BINARY if counts_bytes(resource) else _DECIMAL:
        if value >= factor:
            scaled = value / factor
            text = f"~{scaled:.0f}{suffix}" if scaled >= 100 else f"~{scaled:.3g}{suffix}"
            if len(text) <= CELL_WIDTH:
                return text
    return f"~{value:.1e}"


def _name_cell(name: str, depth: int) -> str:
    text = "  " * depth + name
    return text if len(text) <= NAME_WIDTH else text[: NAME_WIDTH - 1] + "…"


def _resource_cell(resource: str) -> str:
    return resource if len(resource) <= RESOURCE_WIDTH else resource[: RESOURCE_WIDTH - 1] + "…"


def _wrapped(text: str, indent: str = "") -> list[str]:
    """Free text folded to the table's width, continuation lines indented a little more."""
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + "    ",
        break_on_hyphens=False,
    )


def header() -> str:
    cells = "".join(f"{title:>{CELL_WIDTH + 1}}" for title in COLUMNS)
    return f"{'QUOTA':<{NAME_WIDTH}} {'RESOURCE':<{RESOURCE_WIDTH}}{cells}"


def quota_rows(result: QuotaResult, depth: int, resources: set[str] | None) -> Iterator[str]:
    """One row per resource of the quota (its max keys, plus any it uses or requests)."""
    keys = sorted(set(result.max) | set(result.min) | set(result.request) | set(result.runtime))
    keys = [key for key in keys if resources is None or key in resources] or []
    for index, key in enumerate(keys):
        name = _name_cell(result.name, depth) if index == 0 else ""
        used = result.used.get(key)
        runtime = result.runtime.get(key)
        over = used is not None and runtime is not None and used > runtime and not result.reserved
        values = (
            cell(key, result.min.get(key)),
            cell(key, result.max.get(key)),
            cell(key, result.request.get(key)),
            cell(key, used) + ("!" if over else ""),
            cell(key, runtime),
        )
        cells = "".join(f"{value:>{CELL_WIDTH + 1}}" for value in values)
        yield f"{name:<{NAME_WIDTH}} {_resource_cell(key):<{RESOURCE_WIDTH}}{cells}".rstrip()
    if not keys:
        yield _name_cell(result.name, depth)


def _walk(snapshot: Snapshot, tree: str) -> Iterator[tuple[QuotaResult, int]]:
    """Depth-first, children sorted by name, starting at the tree's top-level quotas (and at
    quotas whose parent is not shown: ``tree -n`` for a user who may read one namespace)."""
    children: dict[str, list[str]] = {}
    for name, result in snapshot.quotas.items():
        if result.tree == tree and name != ROOT_QUOTA:
            parent = result.parent if result.parent in snapshot.quotas else ROOT_QUOTA
            children.setdefault(parent, []).append(name)
    stack = [(name, 1) for name in sorted(children.get(ROOT_QUOTA, []), reverse=True)]
    while stack:
        name, depth = stack.pop()
        yield snapshot.quotas[name], depth
        stack.extend((child, depth + 1) for child in sorted(children.get(name, []), reverse=True))


def short_tree_id(tree: str) -> str:
    """A generated (all-digit) tree id cut to its first digits; a chosen ``tree-id`` label whole."""
    if tree.isdigit() and len(tree) > TREE_ID_WIDTH:
        return tree[:TREE_ID_SHOWN] + "…"
    return tree


def tree_title(snapshot: Snapshot, tree: str, total: str) -> str:
    """``default tree (total: …)``, ``tree <profile> (id 1513…, total: …)`` for a profile's
    tree, ``tree <id> (total: …)`` for a tree no profile heads."""
    if tree == DEFAULT_TREE:
        return f"default tree (total: {total})"
    profile = snapshot.tree_profiles.get(tree)
    if not profile:
        return f"tree {tree} (total: {total})"
    return f"tree {profile} (id {short_tree_id(tree)}, total: {total})"


def render_trees(snapshot: Snapshot, resources: set[str] | None = None) -> list[str]:
    """Every tree: its title and total, then its quotas indented under the virtual root."""
    lines = [header()]
    for tree in sorted(snapshot.totals):
        total = ", ".join(
            f"{key} {cell(key, value)}"
            for key, value in sorted(snapshot.totals[tree].items())
            if resources is None or key in resources
        )
        lines.extend(_wrapped(tree_title(snapshot, tree, total or "none")))
        if tree == "" and ROOT_QUOTA in snapshot.quotas:
            lines.extend(quota_rows(snapshot.quotas[ROOT_QUOTA], 0, resources))
        for result, depth in _walk(snapshot, tree):
            idle = not any(result.request.values()) and not any(result.used.values())
            if result.name in (SYSTEM_QUOTA, DEFAULT_QUOTA) and idle:
                continue
            lines.extend(quota_rows(result, depth, resources))
    return lines


def _section(title: str, entries: Iterable[str]) -> list[str]:
    items = list(entries)
    return (
        ["", f"{title}:", *(line for item in items for line in _wrapped(item, "  "))]
        if items
        else []
    )


def _verdict(verdict: Verdict) -> str:
    """One pending pod; what blocks it in the table's units (the JSON keeps the verdict's text)."""
    entry = f"{'admit' if verdict.admitted else 'wait '} {verdict.pod} ({verdict.quota})"
    if verdict.released:
        return f"{entry}: {verdict.reason}"
    if verdict.admitted:
        return entry
    reasons = [
        *(item.describe(readable) for item in verdict.shortfalls),
        *(item.message for item in verdict.limit_refusals),
    ]
    return f"{entry}: {'; '.join(reasons) or verdict.reason}"


SUBJECT_WIDTH = 20
QUOTA_WIDTH = 22
LIMIT_WIDTH = 16
APPS_WIDTH = 6


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def users_header() -> str:
    subject, quota, limit, apps = "USER / GROUP", "QUOTA", "LIMIT", "APPS"
    return (
        f"{subject:<{SUBJECT_WIDTH}} {quota:<{QUOTA_WIDTH}} {limit:<{LIMIT_WIDTH}} "
        f"{apps:>{APPS_WIDTH}}  USED / MAX"
    )


def usage_row(line: SubjectUsage, resources: set[str] | None) -> list[str]:
    """One user (group) at one quota: the limit in force, running applications of its maximum,
    and per resource the usage of the maximum it lists ("!" above it, "-" when not limited; the
    pod count only when a limit lists ``pods``)."""
    limit = line.limit
    max_apps = limit.max_applications if limit is not None else 0
    apps = f"{len(line.applications)}/{max_apps}" if max_apps else str(len(line.applications))
    if max_apps and len(line.applications) > max_apps:
        apps += "!"
    limited = limit.max_resources if limit is not None else {}
    figures = []
    for resource in sorted(set(line.used) | set(limited)):
        if (resources is not None and resource not in resources) or (
            resource == PODS and resource not in limited
        ):
            continue
        used = line.used.get(resource, 0)
        cap = limited.get(resource)
        over = "!" if cap is not None and used > cap else ""
        shown_cap = "-" if cap is None else readable(resource, cap)
        figures.append(f"{resource} {readable(resource, used)}/{shown_cap}{over}")
    text = (
        f"{_cut(f'{line.kind} {line.name}', SUBJECT_WIDTH):<{SUBJECT_WIDTH}} "
        f"{_cut(line.quota, QUOTA_WIDTH):<{QUOTA_WIDTH}} "
        f"{_cut(line.limit_name or '-', LIMIT_WIDTH):<{LIMIT_WIDTH}} "
        f"{apps:>{APPS_WIDTH}}  {', '.join(figures)}"
    )
    return _wrapped(text.rstrip()) or [text]


def render_users(plan: Plan, resources: set[str] | None = None) -> str:
    """The ``--users`` view: every user and group at every quota of its path (or where a limit
    names it), then the usage above a limit (reported, nothing is evicted), the pending pods and
    the problems."""
    view = plan.snapshot.user_limits
    lines = [users_header()]
    for line in view.usage():
        lines += usage_row(line, resources)
    over = [
        item.message
        for tree in sorted(plan.snapshot.totals)
        if (ledger := view.ledger(tree)) is not None
        for item in ledger.over_use()
    ]
    lines += _section(
        "Over a user or group limit (new pods that need more wait, none evicted)", over
    )
    lines += _section("Pending pods", (_verdict(verdict) for verdict in plan.admission))
    lines += _section("Problems", (problem_line(p) for p in plan.problems))
    return "\n".join(lines) + "\n"


def _revocation_line(plan: Plan, quota: str, victims: list[PodInfo]) -> str:
    """``quota: victims``, and the pods spared for their minimum runtime with when each may go."""
    line = f"{quota}: {', '.join(p.key for p in victims) or 'no own pods to evict at this level'}"
    spared = plan.spared.get(quota, [])
    if spared:
        line += "; spared for their minimum runtime: " + ", ".join(
            f"{pod.key} (until {moment_text(until)})" for pod, until in spared
        )
    return line + _kept_text(plan, victims)


def _kept_text(plan: Plan, victims: list[PodInfo]) -> str:
    """``; kept by a budget: ns/p (why)`` for the victims a PodDisruptionBudget would keep."""
    kept = refused_evictions(victims, plan.budgets)
    if not kept:
        return ""
    return "; kept by a budget: " + ", ".join(f"{pod.key} ({why})" for pod, why in kept)


def render_plan(plan: Plan, resources: set[str] | None = None) -> str:
    """The whole table output: trees, pending pods, preemptions, revocations, problems."""
    lines = render_trees(plan.snapshot, resources)
    lines += _section("Pending pods", (_verdict(verdict) for verdict in plan.admission))
    lines += _section(
        "Next gate round's in-quota preemptions (quota: waiting pod <- evicted pods)",
        (
            f"{each.quota}: {each.waiting.key} <- {', '.join(v.key for v in each.victims)}"
            + _kept_text(plan, each.victims)
            for each in plan.preemptions
        ),
    )
    lines += _section(
        "Next revocation round (over-used quotas, eviction order)",
        (_revocation_line(plan, quota, pods) for quota, pods in plan.revocations),
    )
    lines += _section("Problems", (problem_line(p) for p in plan.problems))
    return "\n".join(lines) + "\n"
