"""Spawning: exit via pidfd, bounded waits, logs to a file, death with the supervisor."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from process_helpers import gone, unique_run_id, until

from legion_tui.supervisor.processes.process import (
    death_signal_prefix,
    marker_env,
    reap,
    spawn_child,
)

pytestmark = pytest.mark.host

RUN_ID = unique_run_id("spawn")

HOST = r"""
import asyncio, os, sys
from pathlib import Path
import legion_tui.supervisor.processes.process as process
from legion_tui.supervisor.processes.process import marker_env, spawn_child

if sys.argv[2] == "python":
    process.death_signal_prefix = process.python_launcher_prefix

async def main() -> None:
    tmp = Path(sys.argv[1])
    env = marker_env(run_id=f"host-{os.getpid()}", node_id="n1", socket_path=tmp / "s",
                     run_dir=tmp, session_file=tmp / "n1.jsonl")
    child = await spawn_child([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"],
                              env=env, cwd=tmp, log_path=tmp / "n1.log")
    print(child.pid, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return marker_env(
        run_id=RUN_ID,
        node_id="n1",
        socket_path=tmp_path / "s.sock",
        run_dir=tmp_path,
        session_file=tmp_path / "n1.jsonl",
        inbox=tmp_path / "inbox.md",
    )


async def test_child_sees_the_marker_env_and_logs_to_a_file(tmp_path: Path) -> None:
    code = (
        "import os; print(os.environ['LEGION_RUN_ID'], os.environ['LEGION_NODE_ID'], "
        "os.environ['LEGION_INBOX']); import sys; sys.exit(3)"
    )
    child = await spawn_child(
        [sys.executable, "-c", code],
        env=_env(tmp_path),
        cwd=tmp_path,
        log_path=tmp_path / "terminal" / "n1.log",
    )
    assert await child.wait(10.0) == 3
    assert child.returncode == 3
    assert (
        tmp_path / "terminal" / "n1.log"
    ).read_text() == f"{RUN_ID} n1 {tmp_path / 'inbox.md'}\n"
    assert os.getpgid(os.getpid()) != child.pgid
    await child.aclose()


async def test_exit_is_learned_although_a_grandchild_holds_the_pipe(tmp_path: Path) -> None:
    # gh-119710: Process.wait() blocks while a grandchild keeps stdout open; the pidfd
    # does not care.
    code = (
        "import subprocess, sys; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
        "sys.exit(0)"
    )
    child = await spawn_child(
        [sys.executable, "-c", code],
        env=_env(tmp_path),
        cwd=tmp_path,
        log_path=tmp_path / "n1.log",
        pipes=True,
    )
    assert await child.wait(10.0) == 0
    from legion_tui.supervisor.processes.sweep import sweep

    report = await sweep(root=child.process, run_id=RUN_ID, node_ids={"n1"}, force=True)
    assert report.survivors == []
    await child.aclose()


async def test_wait_is_bounded_and_reports_a_signal_death(tmp_path: Path) -> None:
    child = await spawn_child(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        env=_env(tmp_path),
        cwd=tmp_path,
        log_path=tmp_path / "n1.log",
    )
    assert await child.wait(0.05) is None
    os.killpg(child.pgid, signal.SIGKILL)
    assert await child.wait(10.0) == -signal.SIGKILL
    await child.aclose()


REPO = Path(__file__).resolve().parents[1]


def _runs_the_command(pid: int) -> bool:
    """True once `pid` has exec'd the host's command (argv: python -c "import time…")."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return len(argv) > 2 and argv[1] == b"-c" and argv[2].startswith(b"import time")


@pytest.mark.parametrize("launcher", ["setpriv", "python"])
async def test_children_die_with_a_sigkilled_supervisor(tmp_path: Path, launcher: str) -> None:
    assert death_signal_prefix()  # setpriv or the prctl launcher
    script = tmp_path / "host.py"
    script.write_text(HOST)
    host = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(tmp_path),
        launcher,
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    try:
        assert host.stdout is not None
        line = await asyncio.wait_for(host.stdout.readline(), 20.0)
        pid = int(line)
        assert not gone(pid)
        # The death signal is armed inside the launcher, just before it execs the
        # command; a host killed before that is a different race (the next start's
        # marker sweep covers it), so wait until the command itself runs.
        assert await until(lambda: _runs_the_command(pid), bound=10.0)
        host.kill()
        assert await until(lambda: gone(pid), bound=2.0), f"child {pid} outlived its host"
        reap([pid])  # it was re-parented to us (we are a subreaper)
    finally:
        if host.returncode is None:
            host.kill()
        await asyncio.wait_for(host.wait(), 5.0)
