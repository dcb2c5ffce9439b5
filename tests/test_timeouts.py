"""A cancel is never swallowed by a bounded wait (legion_tui.timeouts).

On Python 3.11, `asyncio.wait_for` returns the awaited thing's result when a cancel lands
in the same loop step as its end (CPython gh-86296). A task that loops on such a wait then
goes round again, and whoever cancelled it and awaits its end waits for ever: the host's
close hung so in CI, on the orphan reaper woken by the SIGCHLD of an agent just stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable

import pytest

from legion_tui.supervisor.processes.orphans import OrphanReaper
from legion_tui.timeouts import within

pytestmark = pytest.mark.unit

Bounded = Callable[[Awaitable[bool], float], Awaitable[bool]]


async def _cancel_with_the_wake(wait: Bounded) -> bool:
    """A task looping on `wait(event.wait(), …)`: the event is set and the task cancelled
    in one step. Whether the task ended (within 2 s)."""
    wake = asyncio.Event()

    async def waiter() -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await wait(wake.wait(), 60.0)
            wake.clear()

    task = asyncio.create_task(waiter())
    await asyncio.sleep(0.01)  # inside its wait
    wake.set()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2.0)
    task.cancel()  # the swallowed case: end it for good (its next wait never returns)
    await asyncio.gather(task, return_exceptions=True)
    return bool(done)


async def test_a_cancel_that_lands_with_the_awaited_end_is_not_swallowed() -> None:
    assert await _cancel_with_the_wake(within)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="fixed in 3.12's wait_for")
async def test_the_same_cancel_is_swallowed_by_3_11s_wait_for() -> None:
    """The flaw `within` exists for, shown by the same scenario (so the test above can
    fail: with `wait_for` in its place, it does)."""
    assert not await _cancel_with_the_wake(asyncio.wait_for)


async def test_the_orphan_reaper_closes_when_a_child_exit_wakes_it_in_the_same_step() -> None:
    reaper = OrphanReaper()
    reaper.start()
    await asyncio.sleep(0.01)  # inside its wait for a SIGCHLD or the next sweep
    reaper.wake()  # a stopped agent's SIGCHLD, heard in the step the close cancels in
    await within(reaper.close(), 5.0)
    assert [t for t in asyncio.all_tasks() if t.get_name() == "orphan-reaper"] == []


async def test_within_gives_the_result_or_a_timeout_and_cancels_what_it_waited_on() -> None:
    assert await within(asyncio.sleep(0, "done"), 1.0) == "done"
    slow = asyncio.ensure_future(asyncio.sleep(60))
    with pytest.raises(TimeoutError):
        await within(slow, 0.01)
    assert slow.cancelled()


async def test_a_storm_of_sigchld_fills_the_wakeup_socket_without_a_word_on_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pause of hundreds of agents: their SIGCHLDs fill the loop's wakeup socket while
    the loop is busy, and Python printed "Exception ignored when trying to write to the
    signal wakeup fd" per signal over the user's terminal. The reaper does not need every
    one (its periodic sweep takes a lost SIGCHLD)."""
    import os
    import signal
    import sys

    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(str(u.err_msg)))
    reaper = OrphanReaper()
    reaper.start()
    try:
        for _ in range(300_000):  # the loop reads nothing meanwhile: the socket fills
            os.kill(os.getpid(), signal.SIGCHLD)
        await asyncio.sleep(0)  # a turn of the loop: it drains the socket
    finally:
        await within(reaper.close(), 5.0)
    assert unraisable == []
