"""The Kopf registrations: what is watched, and how the handlers run.

Kopf runs synchronous handlers in a thread pool; ours mutate the engine and set asyncio events,
which must happen on the event loop (an event set from another thread does not wake the loop: the
reconcile loops slept through changes until this was fixed). So every handler must be a coroutine.
"""

from __future__ import annotations

import inspect

import kopf

from elasticquota.controller.handlers import register
from elasticquota.controller.runner import make_state
from elasticquota.settings import Settings


def registered() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    register(registry, make_state(Settings()))
    return registry


def test_every_handler_runs_on_the_event_loop() -> None:
    registry = registered()
    handlers = [
        *registry._indexing.get_all_handlers(),
        *registry._watching.get_all_handlers(),
    ]
    assert handlers
    assert [h.id for h in handlers if not inspect.iscoroutinefunction(h.fn)] == []


def test_only_watching_handlers_nothing_that_writes_state_onto_objects() -> None:
    registry = registered()
    assert registry._changing.get_all_handlers() == []  # no create/update/delete: no finalizers
    assert registry._spawning.get_all_handlers() == []  # no daemons or timers: no annotations
    indexed = sorted(h.id for h in registry._indexing.get_all_handlers())
    assert indexed == ["nodes", "pods", "profiles", "quotas"]
