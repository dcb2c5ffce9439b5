"""An exec agent's terminal is looked at for a read off the event loop, together with
the other looks asked within `LOOK_TICK` (issue 35: a thousand agents' looks, one thread
hand-off each, cost the host more than the /proc reads). Each asker gets its own answer,
a failed look fails its asker alone, and a cancelled asker leaves the others theirs."""

from __future__ import annotations

import asyncio
import threading

import pytest

from legion_tui.supervisor.processes import tty_wait

pytestmark = pytest.mark.unit


async def test_looks_asked_together_are_answered_each_in_one_worker_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, int, int, str]] = []

    def fake(root: int, foreground: int, device: int) -> bool:
        calls.append((root, foreground, device, threading.current_thread().name))
        if root == 13:
            raise ValueError("an unreadable /proc")
        return (root + foreground + device) % 2 == 0

    monkeypatch.setattr(tty_wait, "reading_terminal", fake)
    batches: list[int] = []
    look_all = tty_wait._look_all

    def counted(asked: list[tuple[int, int, int]]) -> list[bool | Exception]:
        batches.append(len(asked))
        return look_all(asked)

    monkeypatch.setattr(tty_wait, "_look_all", counted)
    roots = [r for r in range(40) if r != 13]
    answers = await asyncio.gather(*(tty_wait.look(r, 1, 2) for r in roots))
    assert answers == [(r + 3) % 2 == 0 for r in roots]
    assert [c[:3] for c in calls] == [(r, 1, 2) for r in roots]  # one look each, in order
    assert threading.main_thread().name not in {c[3] for c in calls}  # off the loop
    assert batches == [len(roots)]  # one worker call for them all

    calls.clear()
    failing = asyncio.ensure_future(tty_wait.look(13, 0, 0))
    cancelled = asyncio.ensure_future(tty_wait.look(4, 0, 0))
    fine = asyncio.ensure_future(tty_wait.look(6, 0, 0))
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(ValueError, match="unreadable"):
        await failing
    assert await fine is True
    assert cancelled.cancelled()
