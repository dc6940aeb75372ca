"""How often other tasks got to run while some work was awaited (slicing tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def yields_during(work: Awaitable[T]) -> tuple[T, int]:
    """``work``'s result, and how many times another task ran while it was awaited."""
    yields = 0

    async def count() -> None:
        nonlocal yields
        while True:
            await asyncio.sleep(0)
            yields += 1

    counter = asyncio.create_task(count())
    try:
        result = await work
    finally:
        counter.cancel()
    return result, yields
