"""Ctrl-C ends ``tree --watch`` even when the draw in progress loses its cancellation.

On Python 3.11 a cancellation that meets ``asyncio.wait_for`` as the awaited request completes is
lost (the request's result is returned instead), so cancelling the watch's task, as
``asyncio.run`` does on Ctrl-C, could leave it drawing for ever.
"""

from __future__ import annotations

import asyncio

import pytest

from elasticquota.cli.tree_command import unless_interrupted


async def a_draw_that_swallows_its_cancellation(finished: asyncio.Event) -> str:
    for _ in range(50):
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            continue  # what the lost cancellation amounts to: the work goes on
    finished.set()
    return "drawn"


async def test_ctrl_c_interrupts_a_draw_that_loses_its_cancellation() -> None:
    interrupted, finished = asyncio.Event(), asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, interrupted.set)

    with pytest.raises(KeyboardInterrupt):
        await unless_interrupted(interrupted, a_draw_that_swallows_its_cancellation(finished))

    assert not finished.is_set()  # interrupted while the draw still ran
    await asyncio.wait_for(finished.wait(), 5)  # the draw ends by itself: no task left pending


async def test_without_ctrl_c_the_draw_is_returned() -> None:
    interrupted = asyncio.Event()
    assert (
        await unless_interrupted(
            interrupted, a_draw_that_swallows_its_cancellation(asyncio.Event())
        )
        == "drawn"
    )
