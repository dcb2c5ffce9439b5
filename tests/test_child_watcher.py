"""The host watches its children by pidfd, not a thread each (issue 35: Python 3.11's
default watcher parked a thread in waitpid per agent, a thousand threads at a thousand
agents). Real processes; their exit codes must come back as before."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest
from process_helpers import our_zombies, unique_run_id

from legion_tui.supervisor.processes.process import marker_env, spawn_child

pytestmark = pytest.mark.host

AGENTS = 20


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


async def test_twenty_children_add_no_thread_and_each_exit_code_comes_back(tmp_path: Path) -> None:
    run_id = unique_run_id("watch")
    children = []
    before = _threads()
    for i in range(AGENTS):
        env = marker_env(run_id=run_id, node_id=f"n{i}", socket_path=tmp_path / "s.sock",
                         run_dir=tmp_path, session_file=tmp_path / f"n{i}.jsonl")  # fmt: skip
        # Each waits for its line on stdin, then exits with its own code.
        argv = ["sh", "-c", f"read line; exit {i}"]
        children.append(await spawn_child(argv, env=env, cwd=tmp_path, pipes=True,
                                          log_path=tmp_path / f"n{i}.log"))  # fmt: skip
    # A thread a child was 20 more; the host's own (the reaper's, the ledger's) are few.
    assert _threads() - before < 5
    for child in children:
        stdin = child.proc.stdin
        assert stdin is not None
        stdin.write(b"go\n")
        await stdin.drain()
    codes = [await child.wait(10.0) for child in children]
    assert codes == list(range(AGENTS))
    # asyncio's reports too (the pidfd reader reaped each): no zombie is left behind.
    for child in children:
        await asyncio.wait_for(child.proc.wait(), 10.0)
        child.close()
    assert [c.proc.returncode for c in children] == list(range(AGENTS))
    assert not set(our_zombies()) & {c.pid for c in children}


def test_a_worker_threads_own_loop_hears_its_childs_exit(tmp_path: Path) -> None:
    """A loop in another thread (a helper's `asyncio.run`) after the host's spawns: the
    watcher reads the exit on the loop that started the child, whichever it is."""

    async def host_spawns() -> None:  # installs the watcher, on this thread's loop
        env = marker_env(run_id=unique_run_id("host"), node_id="n", socket_path=tmp_path / "s",
                         run_dir=tmp_path, session_file=tmp_path / "n.jsonl")  # fmt: skip
        child = await spawn_child(["true"], env=env, cwd=tmp_path, log_path=tmp_path / "n.log")
        assert await child.wait(10.0) == 0
        child.close()

    asyncio.run(host_spawns())
    codes: list[int | None] = []

    async def elsewhere() -> None:
        proc = await asyncio.create_subprocess_exec("sh", "-c", "exit 3")
        codes.append(await asyncio.wait_for(proc.wait(), 10.0))

    worker = threading.Thread(target=lambda: asyncio.run(elsewhere()))
    worker.start()
    worker.join(20.0)
    assert not worker.is_alive() and codes == [3]
