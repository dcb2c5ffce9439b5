"""Headless hosts as subprocesses: `legion run`, `legion demo --headless`, and a SIGTERM
that pauses instead of failing."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest
from supervisor_helpers import LEGION, ask_for_sim, cli_env, run_cli

from legion_tui.ledger import LedgerError, open_ledger, read_snapshot
from legion_tui.model import EventType, NodeStatus
from legion_tui.runs.catalog import find_session_run

pytestmark = pytest.mark.host


async def test_legion_run_settles_with_a_verdict(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "run", "worker", "--task", "Fix the retry path", "--kind", "sim", "--speed", "200",
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert "○ worker-0 (worker, sim)" in out
    # A simulated verdict never reads as real work done in the repository.
    assert lines[-2].startswith("root/worker-0: settled · ✓ ok (simulated) — ")
    assert lines[-1].startswith("note: simulated — 1 agent(s) ran as the simulated agent")


async def test_legion_run_with_a_team(tmp_path: Path) -> None:
    ask_for_sim(tmp_path)
    code, out, err = await run_cli(
        "run", "centurion", "--task", "lead", "--name", "lead", "--speed", "200", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    paths = {n["path"]: n for n in doc["nodes"]}
    team = [p for p in paths if p.startswith("root/lead/")]
    assert len(team) >= 2  # the centurion sim spawned its team through the socket
    assert all(paths[p]["status"] == "settled" for p in team)
    # The sim lead's team is simulated too, and says so.
    assert all(paths[p]["kind"] == "sim" and paths[p]["simulated"] for p in ["root/lead", *team])
    assert paths["root/lead"]["verdict"]["ok"] is True


async def test_legion_run_refused_exits_1(tmp_path: Path) -> None:
    code, _out, err = await run_cli("run", "wizard", "--task", "x", cwd=tmp_path)
    assert code == 1 and "wizard" in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_pauses_the_run(tmp_path: Path, sig: signal.Signals) -> None:
    ask_for_sim(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        LEGION, "run", "worker", "--task", "slow", "--speed", "0.01", "--session", "t",
        cwd=tmp_path, env=cli_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:  # until the worker runs (read-only, from the ledger)
        info = find_session_run(tmp_path, "t")
        try:
            nodes = read_snapshot(info.ledger_path)[0] if info else []
        except LedgerError:  # not created yet, or still empty
            nodes = []
        if any(n.name == "worker-0" and n.status is NodeStatus.RUNNING for n in nodes):
            break
        assert time.monotonic() < deadline, "worker never ran"
        await asyncio.sleep(0.05)
    proc.send_signal(sig)
    _out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 1 and b"paused" in err
    assert info is not None
    ledger = await open_ledger(info.ledger_path)
    try:
        (worker,) = [n for n in await ledger.get_nodes() if n.name == "worker-0"]
        assert worker.status is NodeStatus.RETIRED
        events = await ledger.get_events(worker.id, types=[EventType.NODE_RETIRED])
        assert events[-1].data["reason"] == "session-shutdown"
        assert not (await ledger.get_events(worker.id, types=[EventType.NODE_FAILED]))
    finally:
        await ledger.close()


async def test_demo_headless(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "demo", "--headless", "--duration", "4", "--speed", "20", "--json", cwd=tmp_path
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["nodes"] == 20 == report["planned_nodes"]
    assert report["process_children"] >= 1
    # The stuck agent's replayed 7 minutes do not count 4 s in: stuck as the dashboard
    # says it (tool time from the launch), never from the replayed history.
    assert report["stalled"] == 0
    assert report["failed"] >= 1
    assert report["tokens_out"] > 0


async def test_a_corrupt_ledger_is_refused_and_left_untouched(tmp_path: Path) -> None:
    ask_for_sim(tmp_path)
    code, _out, err = await run_cli(
        "run", "worker", "--task", "x", "--speed", "200", "--session", "s", cwd=tmp_path
    )
    assert code == 0, err
    info = find_session_run(tmp_path, "s")
    assert info is not None
    garbage = b"this is not a database at all\n" * 100
    info.ledger_path.write_bytes(garbage)
    run_json = (info.dir / "run.json").read_bytes()
    code, _out, err = await run_cli("run", "worker", "--task", "x", "--session", "s", cwd=tmp_path)
    assert code == 1 and "legion.db" in err and "Traceback" not in err
    assert info.ledger_path.read_bytes() == garbage
    assert (info.dir / "run.json").read_bytes() == run_json
    code, _out, err = await run_cli("status", "--session", "s", cwd=tmp_path)
    assert code == 1 and "legion.db" in err and "Traceback" not in err


async def _served(project: Path) -> bool:
    code, out, _err = await run_cli("status", "--json", cwd=project)
    return code == 0 and json.loads(out)["live"] is True


async def test_the_dashboard_host_pauses_on_sigterm(tmp_path: Path) -> None:
    """`legion tui` in a real pseudo-terminal hosts the supervisor: a worker spawned from
    another shell is paused (not failed) by SIGTERM."""
    import fcntl
    import pty
    import struct
    import termios

    async def host() -> tuple[int, asyncio.subprocess.Process]:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 110, 0, 0))
        proc = await asyncio.create_subprocess_exec(
            LEGION, "tui", "--session", "dash", cwd=tmp_path,
            env=cli_env() | {"TERM": "xterm-256color"},
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        return master, proc

    def drain(master: int) -> None:  # keep the terminal's buffer from filling up
        try:
            while os.read(master, 65536):
                pass
        except OSError:
            pass

    ask_for_sim(tmp_path)
    loop = asyncio.get_running_loop()
    master, proc = await host()
    os.set_blocking(master, False)
    loop.add_reader(master, drain, master)
    try:
        deadline = time.monotonic() + 30
        while not await _served(tmp_path):  # until the dashboard's host answers
            assert time.monotonic() < deadline, "the dashboard never served"
        code, out, err = await run_cli("spawn", "worker", "--task", "slow", "--name", "w",
                                       cwd=tmp_path)  # fmt: skip
        assert code == 0, err
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 30)
    finally:
        loop.remove_reader(master)
        os.close(master)
        if proc.returncode is None:
            proc.kill()
    code, out, _ = await run_cli("status", "--json", "--session", "dash", cwd=tmp_path)
    (w,) = [n for n in json.loads(out)["nodes"] if n["name"] == "w"]
    assert w["status"] == "retired"
    info = find_session_run(tmp_path, "dash")
    assert info is not None
    ledger = await open_ledger(info.ledger_path)
    try:
        events = await ledger.get_events(w["id"], types=[EventType.NODE_RETIRED])
        assert events[-1].data["reason"] == "session-shutdown"
    finally:
        await ledger.close()


async def test_a_command_that_failed_is_reported_with_its_last_line(tmp_path: Path) -> None:
    """Without a verdict, the run's last word on a node is why it failed and the last
    line its command printed: a lead whose card lacked `maxSubagentDepth` read only
    `failed · no verdict`, its reason left in the run's terminal log (tried by hand)."""
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "lead.md").write_text(
        "---\nname: lead\ndescription: Cannot dispatch.\nkind: exec\nrole: worker\n"
        'command: ["sh", "-c", "echo dispatching; echo refused: no depth >&2; exit 3"]\n'
        "---\nLead.\n"
    )  # fmt: skip
    code, out, err = await run_cli("run", "lead", "--task", "Lead.", cwd=tmp_path)
    assert code == 1, err
    assert "root/lead-0: failed · exited with status 3 — its last line: refused: no depth" in (
        out.splitlines()
    ), out
