"""The rule of the bound on a Ray actor's start (`supervisor/backends/ray/starts.py`), on a
clock the test steps: a launch fails only once no start of the host's has ended for the
whole bound — so a batch longer than the bound starts each in its turn, and a launch no
node takes fails one bound after its creation. No Ray and no wall clock: the starts are
futures the test resolves, the time is the test's, and every assertion is an order or a
time of that clock (issue 29: no test times the machine)."""

from __future__ import annotations

import asyncio

import pytest

from legion_tui.supervisor.backends.ray.starts import NotStarted, StartClock

pytestmark = pytest.mark.unit

BOUND = 10.0


class SteppedClock:
    """Time that moves only when the test says; `sleep` wakes when it has moved far enough."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now + seconds, woken))
        await woken

    async def step_to(self, moment: float) -> None:
        """Move to `moment`, wake the sleepers due, and let every task run until none can
        (a bounded number of loop turns: nothing here waits on anything else)."""
        self.now = moment
        for due, woken in self._sleepers:
            if due <= moment and not woken.done():
                woken.set_result(None)
        self._sleepers = [(d, w) for d, w in self._sleepers if not w.done()]
        for _ in range(20):
            await asyncio.sleep(0)


class Launch:
    """One actor's start: its future (the node's answer, set by the test) and what the
    bounded start made of it, with the clock's time."""

    def __init__(self, starts: StartClock, clock: SteppedClock, name: str) -> None:
        self.node_answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.outcome: tuple[float, str] | None = None
        self._clock = clock
        self.task = asyncio.ensure_future(self._run(starts, name))

    async def _run(self, starts: StartClock, name: str) -> None:
        try:
            placed = await starts.bounded(self.node_answer, BOUND)
        except NotStarted:
            self.outcome = (self._clock.time(), "not started")
        else:
            self.outcome = (self._clock.time(), placed)


def _clock() -> tuple[SteppedClock, StartClock]:
    clock = SteppedClock()
    return clock, StartClock(now=clock.time, sleep=clock.sleep)


async def test_a_batch_longer_than_the_bound_starts_each_in_its_turn() -> None:
    clock, starts = _clock()
    batch = [Launch(starts, clock, f"b{n}") for n in range(5)]
    await clock.step_to(0.0)  # all created at 0
    # A node starts one actor every 8 s: the third starts 24 s after its creation, more
    # than twice the bound, and still starts — each start moved the bound on.
    for n, moment in enumerate((8.0, 16.0, 24.0)):
        await clock.step_to(moment - 0.5)
        assert [launch.outcome for launch in batch] == [
            (at, f"node-{k}") for k, at in enumerate((8.0, 16.0, 24.0)[:n])
        ] + [None] * (5 - n)
        batch[n].node_answer.set_result(f"node-{n}")
        await clock.step_to(moment)
    # Then no node starts anything: the two left fail one bound after the last start,
    # not before.
    await clock.step_to(24.0 + BOUND - 0.5)
    assert [launch.outcome for launch in batch[3:]] == [None, None]
    await clock.step_to(24.0 + BOUND)
    assert [launch.outcome for launch in batch] == [
        (8.0, "node-0"), (16.0, "node-1"), (24.0, "node-2"),
        (34.0, "not started"), (34.0, "not started"),
    ]  # fmt: skip
    assert all(launch.node_answer.cancelled() for launch in batch[3:])


async def test_a_launch_no_node_takes_fails_one_bound_after_its_creation() -> None:
    clock, starts = _clock()
    await clock.step_to(100.0)
    lone = Launch(starts, clock, "huge")
    await clock.step_to(100.0)  # created now: its bound counts from here
    await clock.step_to(100.0 + BOUND - 0.5)
    assert lone.outcome is None
    await clock.step_to(100.0 + BOUND)
    assert lone.outcome == (110.0, "not started")


async def test_a_start_that_fails_on_its_node_also_moves_the_bound() -> None:
    """A node took it either way: its failure is the node's answer, not a refusal."""
    clock, starts = _clock()
    first, second = Launch(starts, clock, "a"), Launch(starts, clock, "b")
    await clock.step_to(0.0)  # both created at 0
    await clock.step_to(9.0)
    first.node_answer.set_exception(RuntimeError("the node's own error"))
    await clock.step_to(9.0)
    assert first.task.done() and isinstance(first.task.exception(), RuntimeError)
    await clock.step_to(18.5)  # past the second's own creation + bound, not past 9 + bound
    assert second.outcome is None
    await clock.step_to(19.0)
    assert second.outcome == (19.0, "not started")
