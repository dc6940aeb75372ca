"""Every private member of Kopf the operator uses, looked up by name at run time, and the check at
start-up that the installed Kopf still has them.

Kopf's public contract for an admission server is a protocol (``server``: called with Kopf's
admission function, it yields the webhooks' client configurations). Four things have no public
way, so the operator reaches into ``kopf._core.engines.admission``, which Kopf may change in any
minor release:

- ``build_webhooks``, Kopf's builder of the managed configurations' webhooks: replaced by one that
  adds the pod webhooks' ``namespaceSelector`` (``server.build_webhooks_excluding_namespaces``);
- the errors Kopf's admission function raises for a review it cannot serve (``WebhookError``; a
  resource it does not serve, ``UnknownResourceError``, or serves twice,
  ``AmbiguousResourceError``): the server answers them 400, 404 and 409 as Kopf's own does;
- the ``memories`` Kopf's admission function recalls each object's memo from (its
  ``MemoGetter.recall_memo``): ``AdmissionMemories`` keeps none, where Kopf's keep one per object
  until a watch of Kopf's (the operator has none) sees it deleted;
- the ``registry`` bound to that function: the server answers the reviews of the handlers it
  recorded for that registry itself (``direct``), without Kopf's handler machinery.

Nothing here is imported with the module: ``require_kopf_hooks`` (``server.configure_admission``,
when the operator starts) looks each member up and raises ``UnsupportedKopfError`` naming what
the installed Kopf lacks, its version and the versions the operator is tested with, rather than an
``AttributeError`` in a traceback later. The command line's read commands never import this
module. Logger names such as ``kopf._core.engines.peering`` are only names, not members.
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.metadata
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

import kopf

#: Kopf's admission engine, where every member the operator uses lives.
ADMISSION = "kopf._core.engines.admission"
#: The newest Kopf the hooks were checked against: constraints.txt's pin, which a unit test holds
#: this to (``make constraints`` moving Kopf fails it until the hooks were checked again); the
#: oldest is the package's declared lower bound, read from its installed metadata.
TESTED_KOPF = "1.45.2"
#: What ``importlib.import_module`` is: a test passes a stand-in Kopf.
ModuleFinder = Callable[[str], ModuleType]


@dataclass(frozen=True)
class Hook:
    """A member of one of Kopf's private modules (``attribute`` may be dotted: a class's method)
    and what the operator does with it; ``parameter``, one the member must take."""

    module: str
    attribute: str
    use: str
    parameter: str | None = None

    def __str__(self) -> str:
        named = f"{self.module}.{self.attribute}"
        return f"{named}({self.parameter}=...)" if self.parameter else named


BUILD_WEBHOOKS = Hook(ADMISSION, "build_webhooks", "the pod webhooks' namespaceSelector")
#: Kopf's errors of a review it cannot serve, the most specific first, with the HTTP status
#: Kopf's own server answers them with.
REVIEW_ERRORS = (
    (Hook(ADMISSION, "AmbiguousResourceError", "a review's 409 answer"), 409),
    (Hook(ADMISSION, "UnknownResourceError", "a review's 404 answer"), 404),
    (Hook(ADMISSION, "WebhookError", "a review's 400 answer"), 400),
)
#: What ``without_memories`` relies on: the keyword Kopf binds its memories to, and the one
#: method its admission function calls on them (``AdmissionMemories`` implements it).
MEMORIES = (
    Hook(ADMISSION, "serve_admission_request", "no memory per reviewed object", "memories"),
    Hook(ADMISSION, "MemoGetter.recall_memo", "no memory per reviewed object"),
)
#: What ``bound_registry`` relies on: the keyword Kopf binds the operator's registry to.
REGISTRY = Hook(
    ADMISSION, "serve_admission_request", "reviews answered without Kopf's handlers", "registry"
)
#: What every run with webhooks uses; ``BUILD_WEBHOOKS`` only with managed configurations.
SERVING_HOOKS = (*(hook for hook, _ in REVIEW_ERRORS), *MEMORIES, REGISTRY)


class UnsupportedKopfError(RuntimeError):
    """The installed Kopf lacks a private member the operator uses."""


def _lookup(hook: Hook, import_module: ModuleFinder) -> Any:
    """The member, or None when the module, the attribute or the parameter is not there."""
    try:
        member: Any = import_module(hook.module)
        for name in hook.attribute.split("."):
            member = getattr(member, name)
    except (ImportError, AttributeError):
        return None
    if hook.parameter is not None:
        try:
            if hook.parameter not in inspect.signature(member).parameters:
                return None
        except (TypeError, ValueError):  # not a callable with a signature
            return None
    return member


def tested_kopf() -> str:
    """The Kopf releases the operator is tested with: from the lower bound the installed package
    declares (pyproject.toml's ``kopf>=``) to ``TESTED_KOPF``."""
    try:
        requirements = importlib.metadata.requires("elastic-quota-operator") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree never installed
        requirements = []
    lowest = next(
        (found[1] for r in requirements if (found := re.match(r"kopf\s*>=\s*([\w.]+)", r))), None
    )
    return f"kopf {lowest} to {TESTED_KOPF}" if lowest else f"kopf up to {TESTED_KOPF}"


def unsupported_message(missing: Iterable[Hook]) -> str:
    """``kopf VERSION lacks MEMBER (USE), ...; elastic-quota-operator is tested with ...``."""
    try:
        installed = importlib.metadata.version("kopf")
    except importlib.metadata.PackageNotFoundError:
        installed = "(version unknown)"
    lacks = ", ".join(f"{hook} ({hook.use})" for hook in missing)
    return f"kopf {installed} lacks {lacks}; elastic-quota-operator is tested with {tested_kopf()}"


def hooks_for(managed: bool) -> tuple[Hook, ...]:
    """The hooks the webhooks need: serving them, and with ``managed`` configurations (the
    ``webhook_configuration`` setting) the builder of their webhooks too."""
    return (*SERVING_HOOKS, BUILD_WEBHOOKS) if managed else SERVING_HOOKS


def require_kopf_hooks(
    hooks: Iterable[Hook], import_module: ModuleFinder = importlib.import_module
) -> None:
    """Raise ``UnsupportedKopfError`` naming every one of ``hooks`` the installed Kopf lacks."""
    missing = [hook for hook in hooks if _lookup(hook, import_module) is None]
    if missing:
        raise UnsupportedKopfError(unsupported_message(missing))


def kopf_problem(
    webhooks: bool, managed: bool, import_module: ModuleFinder = importlib.import_module
) -> str | None:
    """What the installed Kopf lacks for the webhooks (``webhooks``: served at all; ``managed``:
    their configurations too), as ``run`` says it before starting; None: nothing."""
    if not webhooks:
        return None
    try:
        require_kopf_hooks(hooks_for(managed), import_module)
    except UnsupportedKopfError as error:
        return str(error)
    return None


def find(hook: Hook, import_module: ModuleFinder = importlib.import_module) -> Any:
    """The member ``hook`` names; ``UnsupportedKopfError`` when the installed Kopf lacks it."""
    member = _lookup(hook, import_module)
    if member is None:
        raise UnsupportedKopfError(unsupported_message([hook]))
    return member


def review_error_statuses() -> tuple[tuple[type[Exception], int], ...]:
    """Kopf's errors of a review it cannot serve, the most specific first, each with its status."""
    return tuple((find(hook), status) for hook, status in REVIEW_ERRORS)


#: Kopf's own members that ``replace`` put another in the place of, as they were.
_REPLACED: dict[Hook, Any] = {}


def kopf_own(hook: Hook) -> Any:
    """Kopf's own member, also after ``replace``."""
    return _REPLACED[hook] if hook in _REPLACED else find(hook)


def replace(hook: Hook, member: Any) -> None:
    """Put ``member`` where Kopf's code calls its own by name (its module's attribute)."""
    if hook not in _REPLACED:
        _REPLACED[hook] = find(hook)
    module = importlib.import_module(hook.module)
    setattr(module, hook.attribute, member)


class AdmissionMemories:
    """The memories Kopf's admission function recalls an object's memo from, keeping none.

    Kopf's own keep one for every object an UPDATE or DELETE review names (by uid), to be forgotten
    when a watch of Kopf's sees the object deleted; the operator has no such watch and no use for
    the memo, so each pod or workload ever updated (every gated pod, when its gate is removed)
    would stay in memory for the process's lifetime. Each review gets what Kopf gives an object it
    has not seen: a copy of the operator's memo."""

    async def recall_memo(
        self, raw_body: Any, *, memobase: Any = None, ephemeral: bool = False
    ) -> Any:
        return copy.copy(memobase) if memobase is not None else kopf.Memo()


def bound_registry(fn: kopf.WebhookFn) -> kopf.OperatorRegistry | None:
    """The registry Kopf's admission function serves (bound to it as ``registry``), if it is
    one: the server answers that registry's handlers itself (``direct``)."""
    if isinstance(fn, functools.partial):
        registry = fn.keywords.get("registry")
        if isinstance(registry, kopf.OperatorRegistry):
            return registry
    return None


def without_memories(fn: kopf.WebhookFn) -> kopf.WebhookFn:
    """Kopf's admission function (``serve_admission_request`` with what it needs bound, its
    ``memories`` among them) with ``AdmissionMemories``; any other function as it is."""
    if isinstance(fn, functools.partial) and "memories" in fn.keywords:
        return cast(kopf.WebhookFn, functools.partial(fn, memories=AdmissionMemories()))
    return fn
