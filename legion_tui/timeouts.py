"""`within`: `asyncio.wait_for` without the flaw it has on Python 3.11.

On 3.11, `wait_for` swallows a cancellation that arrives in the same loop step as the
awaited thing's completion: it returns the result instead of raising (CPython gh-86296,
fixed in 3.12 by building `wait_for` on `asyncio.timeout`). A loop that waits on an event
with `wait_for` then goes round again, and whoever cancelled it and awaits its end waits
for ever. It hung the host's close: the orphan reaper's wake (a SIGCHLD from the agents
just stopped) landed with the close's cancel, and `make test` timed out in CI.

`asyncio.timeout` counts cancellations (`Task.cancelling`), so an outside cancel always
propagates. Ruff bans `asyncio.wait_for` in this package (pyproject: TID251).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """`await awaitable`, or TimeoutError once `seconds` pass (None: no bound) — it is
    cancelled then, as `asyncio.wait_for` would (wrap it in `asyncio.shield` to keep it)."""
    async with asyncio.timeout(seconds):
        return await awaitable
