"""Who owns a run (issue 14 item 15): one host per session, by an exclusive lock held for
the host's life — and run data only its user can read (item 19).

Real hosts in their own processes, the real CLI, real sockets and files.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from supervisor_helpers import ask_for_sim, hosted, run_cli, settled, spawn_one, until

from legion_tui.runs.catalog import find_session_run
from legion_tui.runs.privacy import OWNER_ONLY_ACL
from legion_tui.runs.socket_link import socket_refusal
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host

# A host of session "s" in its own process. It waits for `go` (so that two of them open
# the session at the same moment), says `claimed` once its Supervisor exists, and with
# `hold` waits for a line on stdin between that and its start — the window in which a
# check-then-act open let another host take the same run. Once started it runs a stuck
# worker as its own OS process (which a wrongful "reopen" would sweep) and says `ready`.
_HOST = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path
    from legion_tui.wire.names import ROOT_ID
    from legion_tui.wire.spawn_request import ChildRequest
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.runs.host_lock import SessionBusy

    async def main():
        project, go, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
        deadline = time.monotonic() + 30
        while not go.exists():
            if time.monotonic() > deadline:
                raise SystemExit("no go")
            time.sleep(0.0005)
        try:
            sup = Supervisor(project, session="s", speed=200.0, default_kind="sim")
        except SessionBusy as err:
            print("busy", err, flush=True)
            return
        print("claimed", flush=True)
        if mode == "hold":
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await sup.start()
        stuck = {"stall_seconds": 1e7}
        (w,) = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("worker", "t", name="w", sim=stuck, isolate=True)]
        )
        while not sup.model.nodes[w.id].progress.in_flight:
            await asyncio.sleep(0.01)
        print("ready", sup.names.node(w.id).pid, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


async def _host(project: Path, go: Path, mode: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOST, str(project), str(go), mode,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def _line(proc: asyncio.subprocess.Process) -> list[str]:
    assert proc.stdout is not None
    return (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().split()


async def _end(*procs: asyncio.subprocess.Process) -> None:
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
        await asyncio.wait_for(proc.wait(), 30)


def _owner_answers(project: Path, pid: int) -> bool:
    """run.json names `pid` as the owner and the run's socket answers."""
    info = find_session_run(project, "s")
    if info is None or info.owner_pid != pid:
        return False
    link = info.socket_link
    target = Path(os.readlink(link)) if link.is_symlink() else link
    return target.exists() and socket_refusal(target) is None


async def _status_names(project: Path) -> dict[str, str]:
    code, out, err = await run_cli("status", "--json", "--session", "s", cwd=project)
    assert code == 0, err
    return {n["name"]: n["status"] for n in json.loads(out)["nodes"]}


async def test_a_host_opening_a_session_another_is_starting_is_refused(tmp_path: Path) -> None:
    """The check-then-act window: host A holds the session but has not served yet (no
    socket to answer a liveness check). Host B (the real `legion run`) is refused at once
    instead of taking the run; A then starts and is the one owner; a third host is refused
    while A lives, and A's agent is never swept; once A is gone the session reopens."""
    ask_for_sim(tmp_path)
    go = tmp_path / "go"
    go.touch()
    a = await _host(tmp_path, go, "hold")
    try:
        assert await _line(a) == ["claimed"]
        code, _out, err = await run_cli("run", "worker", "--task", "t", "--session", "s",
                                        "--speed", "200", cwd=tmp_path)  # fmt: skip
        assert code == 1 and f"hosted by another live supervisor (pid {a.pid})" in err, err
        assert a.stdin is not None
        a.stdin.write(b"start\n")
        ready = await _line(a)
        assert ready[0] == "ready", ready
        agent = int(ready[1])
        await until(lambda: _owner_answers(tmp_path, a.pid), 30, "A to own and serve")
        assert await _status_names(tmp_path) == {"root": "running", "w": "running"}
        code, _out, err = await run_cli("run", "worker", "--task", "t", "--session", "s",
                                        "--speed", "200", cwd=tmp_path)  # fmt: skip
        assert code == 1 and "hosted by" in err, err
        assert _owner_answers(tmp_path, a.pid)  # its socket and run.json untouched
        assert psutil.Process(agent).status() != psutil.STATUS_ZOMBIE  # not swept
    finally:
        await _end(a)
    # SIGKILL (a crash) released the lock: the next host reopens and marks the orphan.
    code, _out, err = await run_cli("run", "worker", "--task", "t", "--session", "s",
                                    "--speed", "200", "--name", "x", cwd=tmp_path)  # fmt: skip
    assert code == 0, err


async def test_two_hosts_opening_one_session_at_once_make_one_owner(tmp_path: Path) -> None:
    """Released together: exactly one host owns the run, the other is refused and
    touches nothing — the winner's socket answers and run.json names it."""
    for round_ in range(3):
        project = tmp_path / f"p{round_}"
        project.mkdir()
        go = project / "go"
        hosts = [await _host(project, go, "run") for _ in range(2)]
        try:
            go.touch()
            first = {h.pid: await _line(h) for h in hosts}
            winners = [pid for pid, words in first.items() if words == ["claimed"]]
            losers = [pid for pid, words in first.items() if words[:1] == ["busy"]]
            assert len(winners) == 1 and len(losers) == 1, first
            (winner,) = [h for h in hosts if h.pid == winners[0]]
            (loser,) = [h for h in hosts if h.pid == losers[0]]
            assert (await _line(winner))[0] == "ready"
            await asyncio.wait_for(loser.wait(), 30)
            assert _owner_answers(project, winner.pid)
            assert (await _status_names(project))["w"] == "running"
        finally:
            for h in hosts:
                if h.returncode is None:
                    h.send_signal(signal.SIGKILL)
            await _end(*hosts)


# An exec agent that does its own work in the user's repository (a file there, with the
# umask it was given), writes a session line of its own in the run, and waits for a steer
# (typed into its terminal and appended to its inbox).
_WRITER = (
    "---\nname: writer\ndescription: Writes files.\nkind: exec\nrole: worker\n"
    'command: ["sh", "-c", "umask > {cwd}/work.txt; '
    "echo '{{}}' > $LEGION_SESSION_FILE; echo ready; read -r a; echo got $a\"]\n"
    "---\nWrite.\n"
)


def _open_to_others(root: Path, *, folders_only: bool = False) -> list[str]:
    """Everything under `root` (itself included) that group or others may read, write or
    enter, as 'mode path'."""
    found = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if folders_only and not path.is_dir():
            continue
        if not path.is_symlink() and st.st_mode & 0o077:
            found.append(f"{st.st_mode & 0o777:o} {path.relative_to(root.parent)}")
    return found


def _has_acls(where: Path) -> bool:
    """Whether this file system takes a default ACL (the files an agent makes itself are
    private only then; without, the 0700 folders above them keep others out)."""
    probe = where / "acl-probe"
    probe.mkdir()
    try:
        os.setxattr(probe, "system.posix_acl_default", OWNER_ONLY_ACL)
    except OSError:
        return False
    finally:
        probe.rmdir()
    return True


async def test_run_data_is_private_and_agents_keep_their_umask(tmp_path: Path) -> None:
    """Item 19: under `.legion/runs/` (0700) nothing is open to group or others — the
    ledger and its -wal/-shm, run.json, session files (the host's and an agent's own),
    terminal logs, the inbox, outputs — while the agent's own file in the user's
    repository keeps the mode its (unchanged) umask gives it."""
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "writer.md").write_text(_WRITER, encoding="utf-8")
    old = os.umask(0o022)  # a common user umask: files 0644, folders 0755
    try:
        async with hosted(tmp_path) as sup:
            sim = await spawn_one(sup, name="sim", sim={"quick": True})
            (x,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("writer", "t", name="x")])
            view = sup.model.nodes[x.id]
            await until(lambda: view.terminal_line == "ready", 30, "the agent's files")
            await sup.control.steer(ROOT_ID, "x", "go")  # its terminal, and its inbox
            await settled(sup, x.id, 30)
            await settled(sup, sim.id, 30)
            await sup.queries.collect(ROOT_ID, "sim")  # outputs/sim.output.md
            await sup.ledger.flush()
            runs_dir = tmp_path / ".legion" / "runs"
            made = {p.relative_to(sup.run.dir).as_posix() for p in sup.run.dir.rglob("*")}
            for expected in ("legion.db", "legion.db-wal", "legion.db-shm", "run.json",
                             f"sessions/{sim.id}.jsonl", f"sessions/{x.id}.jsonl",
                             f"terminal/{x.id}.log", f"inbox/{x.id}.md",
                             "outputs/sim.output.md"):  # fmt: skip
                assert expected in made, sorted(made)
            folders_only = not _has_acls(tmp_path)
            open_ = _open_to_others(runs_dir, folders_only=folders_only)
            assert not open_, f"{len(open_)} open to others:\n" + "\n".join(open_)
        assert not _open_to_others(runs_dir, folders_only=folders_only)  # after the pause
    finally:
        os.umask(old)
    work = tmp_path / "work.txt"
    assert work.read_text().strip() == "0022"  # the agent's umask was left alone
    assert work.stat().st_mode & 0o777 == 0o644  # its work keeps its modes


async def test_a_run_made_before_the_rule_reopens_private(tmp_path: Path) -> None:
    async with hosted(tmp_path, "old") as sup:
        await spawn_one(sup, name="w", sim={"quick": True})
        run_dir = sup.run.dir
    for path in [run_dir.parent, *run_dir.parent.rglob("*")]:  # as an older legion left it
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert _open_to_others(run_dir.parent)
    async with hosted(tmp_path, "old") as again:
        assert again.run.dir == run_dir
        assert not _open_to_others(run_dir.parent)
