"""Stops that hold (issue 14 items 12, 17, 22): a second stop joins the first, a stop the
ledger cannot record still reads stopped, and a host never shuts down under a stop.

The processes, the socket and SQLite are real. The one fault that is simulated is the
full disk of item 17 (no real full filesystem here): the ledger's `update_node` raises
the error the batch writer itself raises on SQLITE_FULL, for `retired` writes only,
until the test "frees" the disk.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psutil
import pytest
from supervisor_helpers import (
    LEGION,
    cli_env,
    hosted,
    run_cli,
    spawn_one,
    stuck_worker,
    until,
)

from legion_tui.ledger import LedgerError, open_ledger, read_snapshot
from legion_tui.model import EventType, NodeStatus
from legion_tui.runs.catalog import find_session_run
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.life.owed_retires import OwedRetires
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host

# An exec agent that outlives SIGTERM: it says when the signal came (its terminal line)
# and goes on until SIGKILL. Its `sleep` dies of the group's SIGTERM; bash lives on.
STUBBORN = (
    "---\nname: stubborn\ndescription: Ignores SIGTERM.\nkind: exec\nrole: worker\n"
    'command: ["bash", "-c", "trap \'echo termed\' TERM; echo ready; '
    'while :; do sleep 0.05; done"]\n---\nHold on.\n'
)


def _stubborn_card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "stubborn.md").write_text(STUBBORN, encoding="utf-8")


def _dead(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_force_stop_during_a_graceful_stops_grace_joins_and_escalates_it(
    tmp_path: Path,
) -> None:
    """Item 12: the force stop returns only once the process is dead (not at once while
    it lives on for the rest of the grace), the first stop ends with it, one retire."""
    _stubborn_card(tmp_path)
    async with hosted(tmp_path, stop_grace=60.0) as sup:
        (s,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("stubborn", "t", name="s")])
        view = sup.model.nodes[s.id]
        await until(lambda: view.terminal_line == "ready", 30, "the agent to start")
        pid = sup.names.node(s.id).pid
        assert pid is not None
        graceful = asyncio.create_task(sup.stops.stop(ROOT_ID, "s"))
        await until(lambda: view.terminal_line == "termed", 30, "SIGTERM, then its grace")
        forced = await asyncio.wait_for(sup.stops.stop(ROOT_ID, "s", force=True), 15)
        alive_at_receipt = not _dead(pid)
        assert forced == "Stopped s."
        assert not alive_at_receipt, "the receipt came while the process still lived"
        # The graceful stop it joined ends with it, long before its 60 s grace.
        assert await asyncio.wait_for(graceful, 15) == "Stopped s."
        await sup.ledger.flush()
        retired = await sup.ledger.get_events(s.id, types=[EventType.NODE_RETIRED])
        assert len(retired) == 1, [e.data for e in retired]
        assert retired[0].data["reason"] == "stop" and retired[0].data["force"] is True
        assert sup.names.node(s.id).status is NodeStatus.RETIRED


async def test_a_stop_of_a_team_joins_a_stop_of_one_member_under_way(tmp_path: Path) -> None:
    """A parent's stop retires a child whose own stop is in its grace by joining it:
    each node of the subtree is retired once, the parent after its children."""
    _stubborn_card(tmp_path)
    async with hosted(tmp_path, stop_grace=60.0) as sup:
        team = [{"role": "stubborn", "name": "m", "task": "t"}]
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": team})
        await until(lambda: sup.model.by_path("root/lead/m") is not None, 30, "the team")
        m = sup.names.resolve(ROOT_ID, "lead/m")
        view = sup.model.nodes[m.id]
        await until(lambda: view.terminal_line == "ready", 30, "the member to start")
        member = asyncio.create_task(sup.stops.stop(ROOT_ID, "lead/m"))
        await until(lambda: view.terminal_line == "termed", 30, "the member's grace")
        assert await asyncio.wait_for(sup.stops.stop(ROOT_ID, "lead", force=True), 15) == (
            "Stopped lead."
        )
        assert await asyncio.wait_for(member, 15) == "Stopped m."
        await sup.ledger.flush()
        events = await sup.ledger.get_events(types=[EventType.NODE_RETIRED])
        assert [e.node_id for e in events] == [m.id, lead.id]


async def test_stop_all_stops_every_child_at_once_and_tells_them_in_order(
    tmp_path: Path,
) -> None:
    """`stop all` of root's children: each one's SIGTERM and grace at the same time, not
    one after another (a thousand children each waited out the one before's sweep); the
    receipt names them in the children's order."""
    _stubborn_card(tmp_path)
    async with hosted(tmp_path, stop_grace=60.0) as sup:
        batch = [ChildRequest("stubborn", "t", name=f"s{i}") for i in range(3)]
        nodes = await sup.launcher.spawn(ROOT_ID, batch)
        views = [sup.model.nodes[n.id] for n in nodes]
        await until(lambda: all(v.terminal_line == "ready" for v in views), 30, "all three")
        graceful = asyncio.create_task(sup.stops.stop(ROOT_ID, "all"))
        # Every child in its grace together: one after another, the second would wait
        # out the first's 60 s.
        await until(lambda: all(v.terminal_line == "termed" for v in views), 30,
                    "SIGTERM to all three")  # fmt: skip
        forced = await asyncio.wait_for(sup.stops.stop(ROOT_ID, "all", force=True), 15)
        told = "\n".join(f"Stopped {n.name}." for n in nodes)
        assert forced == told  # it joined the three stops under way, each forced now
        assert await asyncio.wait_for(graceful, 15) == told
        assert all(sup.names.node(n.id).status is NodeStatus.RETIRED for n in nodes)


def _full_disk(sup: Supervisor, monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """`retired` writes fail as the batch writer fails on SQLITE_FULL until freed."""
    disk = {"full": True}
    real = sup.ledger.update_node
    path = sup.run.ledger_path

    async def update_node(node_id: str, **fields: Any) -> Any:
        if disk["full"] and fields.get("status") is NodeStatus.RETIRED:
            raise LedgerError(f"{path}: write failed (database or disk is full)")
        return await real(node_id, **fields)

    monkeypatch.setattr(sup.ledger, "update_node", update_node)
    return disk


def _ledger_status(sup: Supervisor, node_id: str) -> NodeStatus | None:
    nodes, _usage = read_snapshot(sup.run.ledger_path)
    return next((n.status for n in nodes if n.id == node_id), None)


async def test_a_stop_the_ledger_cannot_record_reads_stopped_and_is_never_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 17: the agent is stopped and the node reads retired (never `running` with no
    agent); the receipt says the record failed; the write lands once the disk frees,
    and neither the pause nor a reopen calls the node interrupted."""
    sup = Supervisor(tmp_path, session="full", speed=200.0, stop_grace=1.0, default_kind="sim")
    await sup.start()
    try:
        w = await stuck_worker(sup, "w")
        disk = _full_disk(sup, monkeypatch)
        receipt = await asyncio.wait_for(sup.stops.stop(ROOT_ID, "w"), 15)
        assert receipt.startswith("Stopped w.\n"), receipt
        assert "database or disk is full" in receipt and "not recorded" in receipt
        assert sup.roster.handle(w.id) is None  # the agent is gone …
        assert sup.names.node(w.id).status is NodeStatus.RETIRED  # … and the node says so
        assert _ledger_status(sup, w.id) is NodeStatus.RUNNING  # not written yet
        disk["full"] = False
        await until(lambda: _ledger_status(sup, w.id) is NodeStatus.RETIRED, 10, "the owed write")
    finally:
        await sup.close()
    async with hosted(tmp_path, "full") as again:
        assert again.interrupted_on_open == []
        events = again.model.nodes[w.id].events
        retired = [e for e in events if e.type is EventType.NODE_RETIRED]
        assert [e.data["reason"] for e in retired] == ["stop"]
        assert not any(e.type is EventType.NODE_ORPHANED for e in events)


async def test_a_close_during_an_owed_retires_last_write_records_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The close comes while a retry round is between a retire's status and the end of its
    event write: the round finishes, and the ledger holds one `node_retired`. (The close
    used to cancel the round there; the retire stayed owed and the last try wrote it
    again — two `node_retired`, seen once in `make soak`.)"""
    sup = Supervisor(tmp_path, session="full", speed=200.0, stop_grace=1.0, default_kind="sim")
    await sup.start()
    try:
        w = await stuck_worker(sup, "w")
        disk = _full_disk(sup, monkeypatch)
        await asyncio.wait_for(sup.stops.stop(ROOT_ID, "w"), 15)
        landed, gate = asyncio.Event(), asyncio.Event()
        real_event = sup.record.event

        async def event(node_id: str, etype: EventType, data: dict[str, Any]) -> Any:
            written = await real_event(node_id, etype, data)
            if etype is EventType.NODE_RETIRED and node_id == w.id and not gate.is_set():
                landed.set()  # in the ledger; the round that wrote it is not over
                await gate.wait()
            return written

        real_close = OwedRetires.close

        async def close(self: OwedRetires) -> None:
            gate.set()  # the round may go on — if the close lets it
            await real_close(self)

        monkeypatch.setattr(sup.record, "event", event)
        monkeypatch.setattr(OwedRetires, "close", close)
        disk["full"] = False
        await asyncio.wait_for(landed.wait(), 10)
    finally:
        await asyncio.wait_for(sup.close(), 30)
    async with hosted(tmp_path, "full") as again:
        events = again.model.nodes[w.id].events
        retired = [e for e in events if e.type is EventType.NODE_RETIRED]
        assert [e.data["reason"] for e in retired] == ["stop"]


async def test_a_retired_write_still_owed_at_close_lands_before_the_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk frees only as the host closes: the close writes the stop, not a pause."""
    sup = Supervisor(tmp_path, session="late", speed=200.0, stop_grace=1.0, default_kind="sim")
    await sup.start()
    try:
        w = await stuck_worker(sup, "w")
        disk = _full_disk(sup, monkeypatch)
        assert "not recorded" in await asyncio.wait_for(sup.stops.stop(ROOT_ID, "w"), 15)
        disk["full"] = False
    finally:
        await sup.close()
    ledger = await open_ledger(sup.run.ledger_path)
    try:
        retired = await ledger.get_events(w.id, types=[EventType.NODE_RETIRED])
        assert [e.data["reason"] for e in retired] == ["stop"]
        row = await ledger.get_node(w.id)
        assert row is not None and row.status is NodeStatus.RETIRED
    finally:
        await ledger.close()


async def test_stop_all_against_a_legion_run_host_stops_everyone_before_it_exits(
    tmp_path: Path,
) -> None:
    """Item 22: the run's top agent is stopped first, which ends the run — but the host
    finishes the stop (its receipt names every child) before it pauses anything: every
    member is retired once, as stopped, and a reopen offers none for resume."""
    _stubborn_card(tmp_path)
    settings = tmp_path / ".legion" / "settings.toml"
    settings.write_text('stopGraceSeconds = 1\n[agent]\ndefault = "sim"\n', encoding="utf-8")
    host = await asyncio.create_subprocess_exec(
        LEGION, "run", "worker", "--task", "slow", "--name", "top", "--speed", "0.01",
        "--session", "t",
        cwd=tmp_path, env=cli_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:

        def top_runs() -> bool:
            info = find_session_run(tmp_path, "t")
            try:
                nodes = read_snapshot(info.ledger_path)[0] if info else []
            except LedgerError:  # not created yet
                return False
            return any(n.name == "top" and n.status is NodeStatus.RUNNING for n in nodes)

        await until(top_runs, 30, "the run's top agent")
        for name in ("m1", "m2"):  # the user's own agents beside the run's
            code, _out, err = await run_cli("spawn", "stubborn", "--task", "t", "--name", name,
                                            cwd=tmp_path)  # fmt: skip
            assert code == 0, err
        code, out, err = await run_cli("stop", "all", cwd=tmp_path)
        assert code == 0, err
        assert out.splitlines() == ["Stopped top.", "Stopped m1.", "Stopped m2."]
        report, _err = await asyncio.wait_for(host.communicate(), 30)
        # The host's own report comes after the stop: every agent retired.
        for name in ("top", "m1", "m2"):
            assert f"root/{name}: retired" in report.decode(), report
    finally:
        if host.returncode is None:
            host.kill()
            await host.wait()
    info = find_session_run(tmp_path, "t")
    assert info is not None
    ledger = await open_ledger(info.ledger_path)
    try:
        for node in [n for n in await ledger.get_nodes(info.run_id) if n.name != "root"]:
            retired = await ledger.get_events(node.id, types=[EventType.NODE_RETIRED])
            assert [e.data["reason"] for e in retired] == ["stop"], (node.name, retired)
    finally:
        await ledger.close()
