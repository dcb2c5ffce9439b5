"""The simulated agent's time (SPEC §9): the wall clock, a fake one that moves only when
the agent sleeps (tests run instantly), and a clock that replays a past history at once
and then runs in real time (`history_seconds`)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["CatchUpClock", "FakeClock", "SimClock", "WallClock"]


class SimClock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """Time that moves only when the agent sleeps, instantly (tests)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self.t = start

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)
        await asyncio.sleep(0)


class CatchUpClock:
    """Starts `behind` seconds in the past and replays instantly until it reaches now.

    This is `history_seconds`: the agent looks as if it had been running that long, and a
    tool call begun in the past shows its true age at once (the demo's stall marker).
    """

    def __init__(self, base: SimClock, behind: float) -> None:
        self.base = base
        self._virtual: float | None = base.now() - behind

    def now(self) -> float:
        return self.base.now() if self._virtual is None else self._virtual

    def catch_up(self) -> None:
        """Drop what is left of the history: from here on, real time."""
        self._virtual = None

    async def sleep(self, seconds: float) -> None:
        if self._virtual is None:
            await self.base.sleep(seconds)
            return
        target = self._virtual + max(0.0, seconds)
        real = self.base.now()
        if target <= real:
            self._virtual = target
            await asyncio.sleep(0)
            return
        self._virtual = None  # caught up: from here on, real time
        await self.base.sleep(target - real)
