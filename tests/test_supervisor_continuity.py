"""SPEC §6.6: exit is a pause, resume is explicit, another session never touches an old
run, and a host killed with SIGKILL leaves orphans that the next start marks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import STUCK, hosted, run_cli, settled, spawn_one, stuck_worker, until

from legion_tui.ledger import read_snapshot
from legion_tui.model import EventType, NodeStatus
from legion_tui.runs.host_lock import SessionBusy
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.processes.sweep import marked_pids
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host

MACHINE = {
    "phases": [
        {"id": "planning", "require": ["always"], "next": ["implementing"]},
        {"id": "implementing", "require": ["children_settled"], "next": ["done"]},
    ]
}


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


def _size(path: str | None) -> int:
    return os.path.getsize(path or "")


def _session_files(sup: Supervisor) -> list[str]:
    return sorted(p.name for p in sup.run.sessions_dir.glob("*.jsonl"))


async def test_exit_pauses_reopen_lists_interrupted_and_spawns_nothing(tmp_path: Path) -> None:
    team = [{"role": "worker", "name": "m", "task": "t", "sim": dict(STUCK)}]
    async with hosted(tmp_path, "s") as first:
        run_id = first.run.run_id
        w = await stuck_worker(first, "w")
        done = await spawn_one(first, name="done")
        await settled(first, done.id)
        on_purpose = await stuck_worker(first, "gone")
        await first.stops.stop(ROOT_ID, "gone")
        lead = await spawn_one(
            first, "centurion", name="lead", phases=MACHINE, sim={"children": team}
        )
        await until(lambda: first.model.by_path("root/lead/m") is not None, what="lead/m")
        m_id = first.names.resolve(ROOT_ID, "lead/m").id
        await until(lambda: first.names.node(m_id).live, what="m live")
        lead_phase = first.names.node(lead.id).phase
        session_file = first.names.node(w.id).session_file
    # Wherever the team had got to (it moves itself with `legion phase`), it is a declared
    # phase — the pause must not push it to `aborted`.
    assert lead_phase in {"planning", "implementing"}

    # The ledger says: paused, not failed; the phase is untouched.
    async with hosted(tmp_path, "s") as again:
        assert again.reopened and again.run.run_id == run_id
        assert again.launches == 0
        interrupted = {v.node.name for v in again.model.interrupted()}
        assert interrupted == {"w", "lead", "m"}  # not `done`, not `gone` (stopped on purpose)
        assert sorted(again.interrupted_on_open) == sorted([w.id, lead.id, m_id])
        for node_id in (w.id, lead.id, m_id):
            node = again.names.node(node_id)
            assert node.status is NodeStatus.RETIRED
            retired = [
                e for e in again.model.nodes[node_id].events if e.type is EventType.NODE_RETIRED
            ]
            assert retired[-1].data["reason"] == "session-shutdown"
        assert again.names.node(lead.id).phase == lead_phase
        assert again.names.node(done.id).status is NodeStatus.SETTLED
        assert again.names.node(on_purpose.id).status is NodeStatus.RETIRED
        assert not again.model.nodes[on_purpose.id].interrupted
        assert again.launches == 0  # listing is all a reopen does

        # A child cannot come back before its team lead does.
        with pytest.raises(OpError) as err:
            await again.control.resume(ROOT_ID, "lead/m")
        assert err.value.code == "FORBIDDEN"

        # Resume is explicit and continues on the old session file (no new file).
        files_before = _session_files(again)
        size_before = _size(session_file)
        receipt = await again.control.resume(ROOT_ID, "w")
        assert receipt == f"Resumed w on its session file {session_file}."
        assert again.launches == 1
        node = again.names.node(w.id)
        assert node.status is NodeStatus.RUNNING and node.session_file == session_file
        assert not again.model.nodes[w.id].interrupted
        await until(lambda: _size(session_file) > size_before, what="appends to the old file")
        assert _session_files(again) == files_before


async def test_a_different_session_never_touches_an_old_run(tmp_path: Path) -> None:
    async with hosted(tmp_path, "old") as old:
        await stuck_worker(old, "w")
        old_dir = old.run.dir
    before = {p: _bytes(p) for p in (old_dir / "run.json", old_dir / "legion.db")}
    listing = sorted(p.name for p in old_dir.rglob("*"))
    async with hosted(tmp_path, "new") as new:
        assert not new.reopened and new.run.run_id != old_dir.name
        assert new.model.interrupted() == []
        await spawn_one(new, name="x")
    assert {p: _bytes(p) for p in before} == before
    assert sorted(p.name for p in old_dir.rglob("*")) == listing


async def test_a_live_session_cannot_be_opened_twice(tmp_path: Path) -> None:
    script = _HOST.format(project=str(tmp_path), session="busy")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line.strip() == b"ready"
        with pytest.raises(SessionBusy):
            Supervisor(tmp_path, session="busy")
    finally:
        proc.kill()
        await asyncio.wait_for(proc.wait(), 10)


_HOST = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from legion_tui.wire.names import ROOT_ID
    from legion_tui.wire.spawn_request import ChildRequest
    from legion_tui.supervisor.core import Supervisor

    async def main():
        sup = Supervisor(
            Path({project!r}), session={session!r}, speed=200.0, default_kind="sim"
        )
        await sup.start()
        stuck = {{"stall_seconds": 1e7}}
        nodes = await sup.launcher.spawn(
            ROOT_ID,
            [
                ChildRequest("worker", "t", name="w", sim=stuck),
                ChildRequest("worker", "t", name="p", sim=stuck, isolate=True),
            ],
        )
        while not all(sup.model.nodes[n.id].progress.in_flight for n in nodes):
            await asyncio.sleep(0.01)
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
    """
)


async def test_sigkilled_host_leaves_orphans_marked_on_next_start(tmp_path: Path) -> None:
    script = _HOST.format(project=str(tmp_path), session="crash")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line.strip() == b"ready"
    os.kill(proc.pid, signal.SIGKILL)
    await asyncio.wait_for(proc.wait(), 10)

    # Read-only, before anyone reopens it: the ledger still says running; status says why
    # that is stale.
    code, out, err = await run_cli("status", "--json", "--session", "crash", cwd=tmp_path)
    assert code == 0, err
    stale = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert stale["w"]["status"] == "running" and stale["w"]["orphaned"] is True
    assert stale["w"]["owner_pid"] == proc.pid and stale["w"]["activity"] is None

    async with hosted(tmp_path, "crash") as sup:
        w, p = sup.names.resolve(ROOT_ID, "w"), sup.names.resolve(ROOT_ID, "p")
        assert p.backend == "process" and p.pid is not None
        for node in (w, p):
            orphaned = [
                e for e in sup.model.nodes[node.id].events if e.type is EventType.NODE_ORPHANED
            ]
            assert len(orphaned) == 1 and orphaned[0].data["owner_pid"] == proc.pid
            assert sup.names.node(node.id).status is NodeStatus.RETIRED
        assert sorted(v.node.id for v in sup.model.interrupted()) == sorted([w.id, p.id])
        assert sup.launches == 0
        # Nothing of the old host's run survives: no process carries its marker.
        assert marked_pids(sup.run.run_id, [w.id, p.id]) == []
        assert (await sup.control.resume(ROOT_ID, "w")).startswith("Resumed w")


async def test_a_batch_written_while_the_host_pauses_is_paused_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spawn batch was being written when the host began to close (a centurion's team,
    mid-demo, at SIGTERM). Before: the pause looked at the tree first, the batch's rows
    landed after, and they stayed `starting` in the ledger for ever — paused by nobody."""
    sup = Supervisor(tmp_path, session="s", default_kind="sim")
    await sup.start()
    record = sup.ctx.record
    write_rows = record.insert_nodes
    writing, written = asyncio.Event(), asyncio.Event()

    async def slow_insert(nodes: Any) -> Any:
        writing.set()
        await written.wait()  # held until the close has gone as far as it can
        return await write_rows(nodes)

    pause = sup.continuity.pause
    pausing = asyncio.Event()

    async def pause_spied() -> None:
        pausing.set()
        await pause()

    monkeypatch.setattr(record, "insert_nodes", slow_insert)
    monkeypatch.setattr(sup.continuity, "pause", pause_spied)
    spawn = asyncio.create_task(spawn_one(sup, name="late", sim=dict(STUCK)))
    await asyncio.wait_for(writing.wait(), 15)
    close = asyncio.create_task(sup.close())
    lock = sup.launcher._spawn_lock  # the batch holds it; the close waits its turn on it
    # As far as the close goes while the batch is held: into the pause (before), or
    # waiting for the batch (asyncio.Lock keeps its waiters in `_waiters`).
    await until(lambda: pausing.is_set() or bool(lock._waiters), what="the close to wait")
    written.set()
    await asyncio.wait_for(close, 30)
    with contextlib.suppress(OpError):
        await spawn
    # What the ledger says (a reopen would mend a `starting` row: read it as it was left).
    nodes, _usage = read_snapshot(sup.run.dir / "legion.db")
    (late,) = (n for n in nodes if n.name == "late")
    assert late.status is NodeStatus.RETIRED  # paused, resumable; never left `starting`


async def test_a_resume_asked_while_the_host_pauses_is_refused_not_left_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket serves the agents until the pause has stopped them all, so a lead may
    still resume a member while the host pauses. Before: the resume wrote `starting`, its
    launch saw the host closing and started nothing, and the ledger kept the node
    `starting` for ever. Now it is refused (CLOSED) and the node stays as it was."""
    async with hosted(tmp_path, "s") as sup:  # (its close is the test's, done by then)
        stuck = await stuck_worker(sup, "stuck")
        await stuck_worker(sup, "stopped")
        await sup.stops.stop(ROOT_ID, "stopped")
        handle = sup.ctx.roster.handle(stuck.id)
        assert handle is not None
        asked: list[str] = []

        async def stop_after_the_ask(*, force: bool, grace: float) -> Any:
            # The pause has written its retirements and is stopping the agents.
            try:
                asked.append(await sup.control.resume(ROOT_ID, "stopped"))
            except OpError as err:
                asked.append(err.code)
            return await stop(force=force, grace=grace)

        stop = handle.stop
        monkeypatch.setattr(handle, "stop", stop_after_the_ask)
        await asyncio.wait_for(sup.close(), 30)
    nodes, _usage = read_snapshot(sup.run.dir / "legion.db")
    status = {n.name: n.status for n in nodes}
    assert status == {
        ROOT_ID: NodeStatus.RETIRED,
        "stuck": NodeStatus.RETIRED,
        "stopped": NodeStatus.RETIRED,
    }, status
    assert asked == ["CLOSED"]
