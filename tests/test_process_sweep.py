"""The stop sweep against a real process tree (SPEC §6.2, §10 'child ignores SIGTERM…')."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_helpers import TREE_AGENT, marked, our_zombies, unique_run_id, until

from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import marker_env, spawn_child, wait_pid_exit
from legion_tui.supervisor.processes.sweep import marked_pids, sweep

pytestmark = pytest.mark.host


async def _spawn_tree(tmp_path: Path, run_id: str, node_id: str) -> ChildProcess:
    script = tmp_path / "tree_agent.py"
    script.write_text(TREE_AGENT)
    ready = tmp_path / f"{node_id}.ready"
    env = marker_env(
        run_id=run_id,
        node_id=node_id,
        socket_path=tmp_path / "s.sock",
        run_dir=tmp_path,
        session_file=tmp_path / f"{node_id}.jsonl",
    )
    child = await spawn_child(
        [sys.executable, str(script), str(ready)],
        env=env,
        cwd=tmp_path,
        log_path=tmp_path / "terminal" / f"{node_id}.log",
    )
    assert await until(ready.exists, bound=10.0), "the tree agent never got ready"
    return child


@pytest.mark.parametrize("force", [True, False])
async def test_sweep_leaves_no_marked_process_and_no_zombie(tmp_path: Path, force: bool) -> None:
    run_id = f"run-sweep-{force}-{time.monotonic_ns()}"
    child = await _spawn_tree(tmp_path, run_id, "n1")
    before = marked(run_id)
    # root + plain + new-session + daemon + stubborn (python may add none of its own).
    assert len(before) >= 5, before
    assert set(marked_pids(run_id, {"n1"})) >= set(before)

    report = await sweep(
        root=child.process,
        run_id=run_id,
        node_ids={"n1"},
        force=force,
        grace=1.0,
        root_exit=child.exited_future(),
    )

    assert report.survivors == []
    assert set(before) <= set(report.signalled)
    assert marked(run_id) == []
    # Orphans re-parented to us (subreaper) were reaped by the sweep, not left as zombies.
    assert await until(lambda: not set(before) & set(our_zombies()), bound=2.0), our_zombies()
    assert child.returncode is not None and child.returncode < 0  # killed by a signal
    # A graceful sweep asks first (SIGTERM, which the stubborn child outlives, then its
    # grace); force goes straight to SIGKILL: the child never hears a SIGTERM.
    heard = tmp_path / "n1.ready.term"
    assert (heard.read_text() if heard.exists() else "") == ("" if force else "TERM\n")
    await child.aclose()


async def test_sweep_of_one_node_spares_its_siblings(tmp_path: Path) -> None:
    run_id = f"run-siblings-{time.monotonic_ns()}"
    doomed = await _spawn_tree(tmp_path, run_id, "doomed")
    sibling = await _spawn_tree(tmp_path, run_id, "sibling")
    try:
        report = await sweep(
            root=doomed.process,
            run_id=run_id,
            node_ids={"doomed"},
            force=True,
            root_exit=doomed.exited_future(),
        )
        assert report.survivors == []
        assert set(marked_pids(run_id, {"sibling"})) == set(marked(run_id))
        assert sibling.returncode is None
    finally:
        await sweep(
            root=sibling.process,
            run_id=run_id,
            node_ids={"sibling"},
            force=True,
            root_exit=sibling.exited_future(),
        )
        await doomed.aclose()
        await sibling.aclose()
    assert marked(run_id) == []


async def test_sweep_of_an_already_dead_child_is_quiet(tmp_path: Path) -> None:
    dead_run = unique_run_id("dead")
    env = marker_env(
        run_id=dead_run,
        node_id="n1",
        socket_path=tmp_path / "s.sock",
        run_dir=tmp_path,
        session_file=tmp_path / "n1.jsonl",
    )
    child = await spawn_child(
        [sys.executable, "-c", "print('bye')"],
        env=env,
        cwd=tmp_path,
        log_path=tmp_path / "terminal" / "n1.log",
    )
    assert await child.wait(10.0) == 0
    report = await sweep(
        root=child.process,
        run_id=dead_run,
        node_ids={"n1"},
        force=False,
        grace=5.0,
        root_exit=child.exited_future(),
    )
    assert report.survivors == []
    assert (tmp_path / "terminal" / "n1.log").read_text() == "bye\n"
    await child.aclose()


@pytest.fixture
def ended() -> Iterator[subprocess.Popen[bytes]]:
    """A child that has exited and is not reaped yet: its pidfd polls ready at once."""
    proc = subprocess.Popen(["true"])
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    yield proc
    proc.wait()


async def test_a_wait_cancelled_in_the_turn_its_pid_ends_closes_its_pidfd_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ended: subprocess.Popen[bytes]
) -> None:
    """The sweep cancels its waits on the processes it stopped; a cancel that lands in
    the loop turn whose poll found the pidfd ready runs its callback a turn after the
    fire closed the fd. Closed there again, the number — reused meanwhile by any file or
    pipe the host opened (a new agent's stdin) — would be closed under its new owner."""
    opened: list[int] = []
    pidfd_open = os.pidfd_open
    monkeypatch.setattr(os, "pidfd_open", lambda pid: opened.append(pidfd_open(pid)) or opened[-1])
    loop = asyncio.get_running_loop()
    waiter = wait_pid_exit(ended.pid)
    (fd,) = opened
    newcomer = os.open(tmp_path / "newcomer", os.O_WRONLY | os.O_CREAT)
    # This turn: the cancel, then the poll finds the pidfd ready (its fire closes it),
    # then a timer due by then opens a file on the freed number.
    loop.call_soon(waiter.cancel)
    loop.call_later(0, os.dup2, newcomer, fd)
    for _ in range(3):
        await asyncio.sleep(0)
    assert waiter.cancelled()
    try:
        os.fstat(fd)  # the newcomer's copy is still open
    finally:
        os.close(fd)
        os.close(newcomer)
