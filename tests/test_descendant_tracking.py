"""Descendants that outlive the host or the sweep (issue 14 items 10 and 11).

10. `kill -9` of the host: the agents die of their parent-death signal, but before the
    fix every descendant of an exec agent lived on, re-parented to init (here 8 of the 11
    processes of the agent's tree 2 s later). The host's watchdog ends them within 2 s.
11. A daemon that double-forks, `setsid`s and drops `LEGION_RUN_ID` survived `legion stop
    --force` while the receipt said `Stopped evader.`. With a cgroup it is killed (the
    empty group proves nothing is left); without one, the receipt names it.

Each runs both ways the host tracks an agent: its cgroup (where the machine lets us make
one — this one does) and, with `LEGION_NO_CGROUP=1`, the sessions and the record of the
pids the host inherits. The hosts are real processes (a Supervisor in a subprocess), the
agents real exec commands on their ptys, the stop the real `legion` CLI on the socket.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from process_helpers import by_env, holds_a_line, proc_state, until
from supervisor_helpers import LEGION, cli_env

from legion_tui.procfs import environ_of, stat_of
from legion_tui.supervisor.processes import cgroups
from legion_tui.wire.names import ENV_NO_CGROUP

pytestmark = pytest.mark.host

PROBE = "LEGION_TEST_PROBE"  # every process of a test's host carries it (inherited env)
WATCHDOG = b"legion_tui.supervisor.processes.watchdog"
MODES = ["cgroup", "no-cgroup"]

# Ten descendants of every kind an agent leaves, five of them in sessions of their own
# (NEW_SESSIONS); then the agent says "ready" and becomes a sleep itself: 11 processes.
# Every intermediate of a double fork has exited by then (each is waited for).
SPREADER = textwrap.dedent(
    r"""
    sleep 300 &
    nohup sleep 300 >/dev/null 2>&1 &
    ( sleep 300 & )
    ( trap '' HUP TERM; exec sleep 300 ) &
    python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(300)' &
    setsid sleep 300 &
    ( setsid sleep 300 & )
    ( nohup setsid sleep 300 >/dev/null 2>&1 & )
    python3 -c 'import os, time
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(300)
        os._exit(0)
    os.waitpid(child, 0)
    '
    ( env -u LEGION_RUN_ID -u LEGION_NODE_ID setsid sleep 300 & )
    echo ready
    exec sleep 300
    """
)
TREE = 11
NEW_SESSIONS = 5

# The daemon of item 11: a double fork, its own session, the run marker dropped.
EVADER = (
    '( env -u LEGION_RUN_ID setsid sh -c \'echo $$ > "$0"; exec sleep 300\' "$1" & )\n'
    "echo ready\nexec sleep 300\n"
)

HOST = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from legion_tui.supervisor.processes import containment
    from legion_tui.wire.names import ROOT_ID
    from legion_tui.wire.spawn_request import ChildRequest
    from legion_tui.supervisor.core import Supervisor

    async def main():
        project, card, recorded = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
        sup = Supervisor(project, session="main", speed=200.0, default_kind="sim")
        await sup.start()
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest(card, "t", name=card)])
        view = sup.model.nodes[node.id]
        while view.terminal_line != "ready":
            await asyncio.sleep(0.01)
        # Without a cgroup, what left the agent's session is known once the host's
        # periodic walk has seen it (every RECORD_EVERY s).
        box = containment.current()
        key = (sup.run.run_id, node.id)
        while box is None or len(box.recorded([key, None])) < recorded:
            await asyncio.sleep(0.01)
        print(sup.names.node(node.id).pid, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


def _probed(probe: str) -> list[int]:
    """Live processes of this test's host (its env probe), the watchdog left out."""
    return [p for p in by_env(PROBE, probe) if WATCHDOG not in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _watchdogs(probe: str) -> list[int]:
    return [p for p in by_env(PROBE, probe) if WATCHDOG in _cmdline(p)]


def _alive(procs: dict[int, int]) -> list[int]:
    """Of `procs` (pid → start time), the ones still running (not zombies, not reused)."""
    out = []
    for pid, start in procs.items():
        stat = stat_of(pid)
        if stat is not None and stat.starttime == start and not stat.dead:
            out.append(pid)
    return out


def _host_groups(host_pid: int) -> list[Path]:
    base = cgroups.own_dir()
    return [] if base is None else list(base.glob(f"legion-{host_pid}-*"))


def _write_card(project: Path, name: str, script: str, *args: str) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (project / f"{name}.sh").write_text(script, encoding="utf-8")
    argv = ", ".join(f'"{a}"' for a in ["sh", str(project / f"{name}.sh"), *args])
    (agents / f"{name}.md").write_text(
        f"---\nname: {name}\ndescription: Leaves processes behind.\nkind: exec\n"
        f"role: worker\ncommand: [{argv}]\n---\nSpread.\n",
        encoding="utf-8",
    )


@asynccontextmanager
async def _host(
    project: Path, card: str, mode: str, recorded: int = 0
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int, str]]:
    """A real host running `card`; yields (host, agent pid, probe). Whatever of it is
    left at the end is killed, the watchdog waited for."""
    if mode == "cgroup" and cgroups.own_dir() is None:
        pytest.skip("no cgroup2 on this machine")
    probe = f"{os.getpid()}-{time.monotonic_ns()}"
    env = {**cli_env(), PROBE: probe}
    if mode == "no-cgroup":
        env[ENV_NO_CGROUP] = "1"
    host = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOST,
        str(project),
        card,
        str(recorded if mode == "no-cgroup" else 0),
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=project,
        start_new_session=True,
    )
    try:
        assert host.stdout is not None
        line = await asyncio.wait_for(host.stdout.readline(), 60)
        assert line.strip(), "the host never got ready"
        yield host, int(line), probe
    finally:
        if host.returncode is None:
            host.kill()
            await asyncio.wait_for(host.wait(), 10)
        for pid in _probed(probe):
            os.kill(pid, signal.SIGKILL)
        assert await until(lambda: not _watchdogs(probe), bound=10.0), "a watchdog lingers"


@pytest.mark.parametrize("mode", MODES)
async def test_kill_9_of_the_host_ends_every_descendant_within_2s(
    tmp_path: Path, mode: str
) -> None:
    _write_card(tmp_path, "spreader", SPREADER)
    async with _host(tmp_path, "spreader", mode, recorded=NEW_SESSIONS) as (host, agent, probe):
        assert await until(lambda: len(_probed(probe)) == TREE + 1, bound=10.0), _probed(probe)
        tree = {p: s.starttime for p in _probed(probe) if p != host.pid and (s := stat_of(p))}
        assert agent in tree and len(tree) == TREE, sorted(tree)
        watchdogs = _watchdogs(probe)
        groups = _host_groups(host.pid)

        killed = time.monotonic()
        os.kill(host.pid, signal.SIGKILL)
        ended = await until(lambda: not _alive(tree), bound=30.0)
        elapsed = time.monotonic() - killed
        print(f"\n[{mode}] {len(_alive(tree))} of {len(tree)} alive {elapsed:.2f} s after kill -9")
        assert ended, f"alive after kill -9 of the host: {_alive(tree)} of {sorted(tree)}"
        await asyncio.wait_for(host.wait(), 10)
        # It was the host's one watchdog (and cgroup, where there is one); both end too.
        assert len(watchdogs) == 1
        assert bool(groups) is (mode == "cgroup"), groups
        assert await until(lambda: not _watchdogs(probe), bound=5.0)
        assert _host_groups(host.pid) == []


@pytest.mark.parametrize("mode", MODES)
async def test_force_stop_ends_a_daemon_that_shed_every_marker_or_names_it(
    tmp_path: Path, mode: str
) -> None:
    pidfile = tmp_path / "daemon.pid"
    _write_card(tmp_path, "evader", EVADER, str(pidfile))
    async with _host(tmp_path, "evader", mode) as (host, agent, _probe):
        assert await until(lambda: holds_a_line(pidfile))
        daemon = int(pidfile.read_text())
        assert proc_state(daemon) not in (None, "Z")
        environ = environ_of(daemon)
        assert environ is not None and not any(e.startswith(b"LEGION_RUN_ID=") for e in environ)
        # A double fork: once its parent is gone it is an orphan the host adopted.
        assert await until(lambda: (st := stat_of(daemon)) is not None and st.ppid == host.pid)
        daemon_stat = stat_of(daemon)
        assert daemon_stat is not None and daemon_stat.session != agent  # left the session

        proc = await asyncio.create_subprocess_exec(
            LEGION, "stop", "--force", "evader", cwd=tmp_path, env=cli_env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        receipt = out.decode().strip()
        print(f"\n[{mode}] receipt: {receipt!r}")
        assert proc.returncode == 0, err.decode()
        alive = {daemon: daemon_stat.starttime}
        if mode == "cgroup":
            # Its group proved it: killed, and the receipt says only what happened.
            assert _alive(alive) == [], "the daemon survived stop --force"
            assert receipt == "Stopped evader."
            # …and the node's group is gone with it.
            assert [n for g in _host_groups(host.pid) for n in g.glob("n-evader-*")] == []
        else:
            # Nothing can tell whose it is: it is named, not left unsaid (and not killed).
            assert receipt == (
                "Stopped evader.\n"
                f"Stopping evader left 1 process(es) alive: pid {daemon} — not stopped."
            )
            assert _alive(alive) == [daemon]
            # It was recorded as inherited: the host's end ends it too.
            os.kill(host.pid, signal.SIGKILL)
            assert await until(lambda: not _alive(alive), bound=2.0), "the daemon outlived"
