"""Headless hosts as subprocesses: `legion run`, `legion demo --headless`, and a SIGTERM
that pauses instead of failing."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

from supervisor_helpers import LEGION, cli_env, run_cli

from legion_tui.ledger import LedgerError, open_ledger, read_snapshot
from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.runs import find_session_run


async def test_legion_run_settles_with_a_verdict(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "run", "worker", "--task", "Fix the retry path", "--speed", "200", cwd=tmp_path
    )
    assert code == 0, err
    lines = out.splitlines()
    assert "○ worker-0 (worker)" in out
    assert lines[-1].startswith("root/worker-0: settled · ✓ ok — ")


async def test_legion_run_with_a_team(tmp_path: Path) -> None:
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
    assert paths["root/lead"]["verdict"]["ok"] is True


async def test_legion_run_refused_exits_1(tmp_path: Path) -> None:
    code, _out, err = await run_cli("run", "wizard", "--task", "x", cwd=tmp_path)
    assert code == 1 and "wizard" in err


async def test_sigterm_pauses_the_run(tmp_path: Path) -> None:
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
    proc.send_signal(signal.SIGTERM)
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
    assert report["stalled"] >= 1
    assert report["failed"] >= 1
    assert report["tokens_out"] > 0


async def test_a_corrupt_ledger_is_refused_and_left_untouched(tmp_path: Path) -> None:
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
