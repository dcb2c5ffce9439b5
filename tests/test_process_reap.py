"""Closing a child never reaps it behind asyncio's watcher ("Unknown child process pid").

The watcher in these tests is asyncio's own threaded one, held back by an event until
the test lets it reap: that is the window in which a close that polls the child (the
transport's `close()` → `Popen.poll()` → `waitpid`) would steal the exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_helpers import until

from legion_tui.supervisor.processes.process import spawn_child

pytestmark = [
    pytest.mark.host,
    pytest.mark.skipif(
        not hasattr(asyncio, "ThreadedChildWatcher"), reason="child watchers are gone (3.14+)"
    ),
]


class HeldWatcher(asyncio.ThreadedChildWatcher):  # type: ignore[misc,name-defined,unused-ignore]
    """asyncio's default watcher, whose reaping waits until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _do_waitpid(self, loop: Any, expected_pid: int, callback: Any, args: Any) -> None:
        self.release.wait(30.0)  # bounded: a broken test must not hang the thread forever
        super()._do_waitpid(loop, expected_pid, callback, args)


@pytest.fixture
def held_watcher() -> Iterator[HeldWatcher]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the watcher API (3.12+)
        policy = asyncio.get_event_loop_policy()
        previous = policy.get_child_watcher()  # type: ignore[attr-defined,unused-ignore]
        watcher = HeldWatcher()
        policy.set_child_watcher(watcher)  # type: ignore[attr-defined,unused-ignore]
    try:
        yield watcher
    finally:
        watcher.release.set()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            policy.set_child_watcher(previous)  # type: ignore[attr-defined,unused-ignore]


def _unknown_child(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "Unknown child process" in r.getMessage()]


async def test_close_after_exit_leaves_the_reap_to_the_watcher(
    tmp_path: Path, held_watcher: HeldWatcher, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="asyncio")
    child = await spawn_child(
        [sys.executable, "-c", "raise SystemExit(3)"],
        env=dict(os.environ),
        cwd=tmp_path,
        log_path=tmp_path / "out.log",
    )
    assert await child.wait(10.0) == 3  # the pidfd saw the exit; nobody reaped yet
    await child.aclose()  # the watcher is held past aclose's bound: close must not reap
    assert not child.reaped
    held_watcher.release.set()
    assert await until(lambda: child.reaped, 10.0)
    await asyncio.sleep(0)
    assert child.proc.returncode == 3  # the watcher's own status, not its 255 fallback
    assert _unknown_child(caplog) == []
    assert child.proc._transport.is_closing()  # type: ignore[attr-defined]


async def test_close_of_a_live_child_neither_kills_nor_leaks_it(
    tmp_path: Path, held_watcher: HeldWatcher, caplog: pytest.LogCaptureFixture
) -> None:
    # A grandchild keeps the stdout pipe open after the child exits (gh-119710): asyncio
    # then never closes the transport on its own; a close asked for earlier must.
    caplog.set_level(logging.WARNING, logger="asyncio")
    held_watcher.release.set()
    code = (
        "import subprocess, sys; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "sys.stdin.read()"
    )
    child = await spawn_child(
        [sys.executable, "-c", code],
        env=dict(os.environ),
        cwd=tmp_path,
        log_path=tmp_path / "out.log",
        pipes=True,
    )
    try:
        child.close()  # still running: its transport stays until the watcher reports
        transport = child.proc._transport  # type: ignore[attr-defined]
        assert not transport.is_closing()
        assert await child.wait(0.2) is None  # not killed by the close
        assert child.proc.stdin is not None
        child.proc.stdin.close()  # EOF: it exits on its own; the grandchild lives on
        assert await until(lambda: child.reaped, 10.0)
        await asyncio.sleep(0)
        assert child.proc.returncode == 0
        assert transport.is_closing()
        assert _unknown_child(caplog) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pgid, signal.SIGKILL)
