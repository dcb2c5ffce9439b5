"""How long an agent's Ray actor may take to start (issue 15): the bound that fails a
launch no node takes, counted so that one big batch does not fail for waiting its turn.

An actor no node has room for waits in Ray's queue for ever, so its launch must fail
within a bound, saying so. But a node also starts its actors' worker processes only a
few at a time (the raylet's `maximum_startup_concurrency`: the node's CPUs, at most its
cores): 200 launches on two 2-core nodes with room for all of them start over minutes,
and a bound counted from each actor's creation failed 128 of the 200 (bench_ray_scale).

So the bound counts from the later of the actor's creation and the last time any actor
of this host started (or failed in its start: a node took it either way): a launch
fails only once the cluster has started none of this host's actors for the whole bound —
no node took it, and none is busy taking the ones before it. A lone launch no node can
take still fails one bound after its creation.

Not a cap on the starts in flight: the host cannot see a node's startup concurrency (it
is that node's cores, not a resource Ray reports), and while the cluster is full a cap
would make the refusals wait their turn too — K at a time, a whole bound each.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["NotStarted", "StartClock", "host_starts"]

T = TypeVar("T")


class NotStarted(Exception):
    """The bound passed with the actor not started. Not a TimeoutError: Ray hands a
    node's own TimeoutError back as one (a `RayTaskError` that is also its cause's
    class), and that is a start that failed on a node, not one no node took."""


class StartClock:
    """When this host's Ray actors last started, and the bound counted from it. `now` and
    `sleep` are the clock it counts by (a test's own clock steps it; nothing else does)."""

    def __init__(
        self,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._now = now
        self._sleep = sleep
        self._last_start = -math.inf  # `now()` of the latest start heard

    async def bounded(self, starting: Awaitable[T], bound: float) -> T:
        """`starting`'s result, or NotStarted (`starting` cancelled) once neither it
        nor any other start of this clock's has ended for `bound` s."""
        began = self._now()
        waiting = asyncio.ensure_future(starting)
        try:
            while not waiting.done():
                left = max(began, self._last_start) + bound - self._now()
                if left <= 0:
                    raise NotStarted
                # Wakes at the deadline as it stands; another's start meanwhile moved it.
                nap = asyncio.ensure_future(self._sleep(left))
                try:
                    await asyncio.wait({waiting, nap}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    nap.cancel()
        finally:
            waiting.cancel()  # a no-op once it is done
        self._last_start = self._now()
        return waiting.result()


_HOST_STARTS = StartClock()


def host_starts() -> StartClock:
    """The process's one clock: a host is one process, and every Ray launch of it
    counts. (Two hosts in one process — tests, benches — only lengthen each other's
    waits while both are starting actors; neither fails for it.)"""
    return _HOST_STARTS
