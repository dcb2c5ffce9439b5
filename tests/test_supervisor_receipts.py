"""SPEC §6.3: stop / abort / steer / wait / collect on real in-process agents, with the
receipt texts pinned verbatim."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from supervisor_helpers import (
    event_types,
    hosted,
    read_text,
    settled,
    spawn_one,
    stuck_worker,
    until,
)

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.tree.rows import activity
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host


async def test_stop_a_live_node(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "worker-2")
        assert await sup.stops.stop(ROOT_ID, "worker-2") == "Stopped worker-2."
        node = sup.names.node(w.id)
        assert node.status is NodeStatus.RETIRED
        retired = [e for e in sup.model.nodes[w.id].events if e.type is EventType.NODE_RETIRED]
        assert retired[-1].data["reason"] == "stop"
        assert retired[-1].data["execution"] == "stopped"


async def test_stop_an_already_settled_then_already_retired_node(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        x = await spawn_one(sup, name="x")
        assert (await settled(sup, x.id)).status is NodeStatus.SETTLED
        # The settle→retire window: a retire, not an interruption that never happened.
        assert await sup.stops.stop(ROOT_ID, "x") == (
            "Retired 1 already-settled child: x (execution: success)"
        )
        event = [e for e in sup.model.nodes[x.id].events if e.type is EventType.NODE_RETIRED][-1]
        at = time.strftime("%H:%M:%S", time.localtime(event.at))
        assert await sup.stops.stop(ROOT_ID, "x") == (
            "No non-retired children to stop. x is already retired "
            f"(execution: success, retired at {at})"
        )


async def test_stop_retires_the_subtree_children_first(tmp_path: Path) -> None:
    team = [
        {"role": "worker", "name": "w0", "task": "t", "sim": {"stall_seconds": 1e7}},
        {"role": "scout", "name": "s0", "task": "t", "sim": {"stall_seconds": 1e7}},
    ]
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": team})
        await until(
            lambda: all(sup.model.by_path(f"root/lead/{n}") for n in ("w0", "s0")),
            what="team spawned",
        )
        assert await sup.stops.stop(ROOT_ID, "lead") == "Stopped lead."
        await sup.ledger.flush()
        events = await sup.ledger.get_events(types=[EventType.NODE_RETIRED])
        order = [e.node_id for e in events]
        ids = {n: sup.names.resolve(ROOT_ID, f"lead/{n}").id for n in ("w0", "s0")}
        assert order.index(lead.id) > max(order.index(i) for i in ids.values())
        assert all(sup.names.node(i).status is NodeStatus.RETIRED for i in [lead.id, *ids.values()])


async def test_stop_all(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        assert await sup.stops.stop(ROOT_ID, "all") == "No non-retired children to stop."
        await stuck_worker(sup, "a")
        done = await spawn_one(sup, name="b")
        await settled(sup, done.id)
        receipt = await sup.stops.stop(ROOT_ID, "all")
        assert receipt.splitlines() == [
            "Stopped a.",
            "Retired 1 already-settled child: b (execution: success)",
        ]
        assert await sup.stops.stop(ROOT_ID, "all") == "No non-retired children to stop."


async def test_abort_receipts(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "worker-2")
        # A steer queued behind the running tool call is dropped first (clear queue).
        outcome, _ = await sup.control.steer(ROOT_ID, "worker-2", "also check the docs")
        assert outcome == "queued"
        outcome, receipt = await sup.control.abort(ROOT_ID, "worker-2")
        assert outcome == "interrupted"
        assert receipt == (
            "Aborted worker-2's current turn (context kept; partial edits may remain)"
            " — dropped 1 queued message(s)"
        )
        assert sup.names.node(w.id).live  # abort is not stop: the agent keeps its context
        # Its row keeps where the turn was cut (before: a blank line, then its task).
        view = sup.model.nodes[w.id]
        await until(lambda: view.progress.last_stop_reason == "aborted", 10, "the abort read")
        cut = activity(view, time.time()).text
        assert re.fullmatch(r"aborted in bash after 00:00:\d\d · s steers it on", cut), cut
        # Idle now: nothing to abort, and that is not an error.
        outcome, receipt = await sup.control.abort(ROOT_ID, "worker-2")
        assert outcome == "no-turn"
        assert receipt == "Nothing to abort: worker-2 is not running a turn."
        assert event_types(sup, w.id).count(EventType.NODE_ABORTED) == 2
        assert activity(view, time.time()).text == cut  # the idle abort changed nothing


async def test_abort_without_a_queue_has_no_dropped_suffix(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        await stuck_worker(sup, "w")
        _, receipt = await sup.control.abort(ROOT_ID, "w", keep_queue=True)
        assert receipt == "Aborted w's current turn (context kept; partial edits may remain)"
        # Live, idle, context kept: status says how to go on.
        from legion_tui.supervisor.hearing.status import render_status

        block = render_status(sup.queries.status(ROOT_ID, "w")).split("\n\n")[1].splitlines()
        assert block[1] == "  running · idle, no turn running (steer w to continue)"


async def test_abort_on_a_retired_or_unknown_node_is_an_error(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        await stuck_worker(sup, "w")
        await sup.stops.stop(ROOT_ID, "w")
        with pytest.raises(OpError) as retired:
            await sup.control.abort(ROOT_ID, "w")
        assert retired.value.code == "RETIRED"
        with pytest.raises(OpError) as unknown:
            await sup.control.abort(ROOT_ID, "nobody")
        assert unknown.value.code == "NOT_FOUND"


def test_abort_timeout_receipt_is_pinned() -> None:
    from legion_tui import receipts

    assert receipts.abort_timeout("worker-2") == (
        "Abort sent to worker-2, but it had not settled within 5s — the running tool may "
        "ignore cancellation; use stop (or stop with force) if it must die."
    )


async def test_steer_an_idle_node_starts_a_turn(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        x = await spawn_one(sup, name="x")
        await settled(sup, x.id)
        turns = sup.progress_watch.progress(x.id).turns
        outcome, receipt = await sup.control.steer(ROOT_ID, "x", "one more thing")
        assert outcome == "accepted"
        assert receipt == "Steer accepted by x (it was idle: a turn started)."
        # It runs again, then settles again with a fresh verdict from the new turn.
        await until(lambda: sup.progress_watch.progress(x.id).turns > turns, what="a new turn")
        assert (await settled(sup, x.id)).status is NodeStatus.SETTLED
        assert EventType.NODE_STEERED in event_types(sup, x.id)


async def test_wait_timeout_stops_nothing_and_says_so(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        w = await stuck_worker(sup, "w")
        result = await sup.queries.wait(ROOT_ID, ["w"], 0.2)
        assert result["state"] == "timeout"
        assert "nothing was stopped" in result["message"] and "w" in result["message"]
        assert sup.names.node(w.id).status is NodeStatus.RUNNING


async def test_wait_and_collect(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        await spawn_one(sup, name="x")
        result = await sup.queries.wait(ROOT_ID, None, 30)
        assert result["state"] == "settled"
        assert result["nodes"][0]["verdict"]["ok"] is True
        collected = await sup.queries.collect(ROOT_ID, "x")
        out = Path(collected["output_file"])
        assert out == sup.run.outputs_dir / "x.output.md"
        assert read_text(out).strip() == collected["text"].strip()
        # The verdict is the JSON object on the final text's last line.
        last = collected["text"].strip().splitlines()[-1]
        assert json.loads(last) == collected["verdict"]


async def test_status_leads_with_the_activity_and_marks_a_stall(tmp_path: Path) -> None:
    """The sim replays a history whose bash call began 7 minutes before its launch: status
    counts the call from the launch (as the dashboard does), and marks a stall once the
    call has really run that long — the same document read 7 minutes later."""
    from legion_tui.supervisor.hearing.status import render_status, status_document

    async with hosted(tmp_path) as sup:
        team = {"history_seconds": 420.0, "stall_seconds": 1e7}
        worker = await spawn_one(sup, name="worker-2", sim=team)
        await until(lambda: bool(sup.queries.status(ROOT_ID, "worker-2")["nodes"][0]["activity"]))
        doc = sup.queries.status(ROOT_ID, "worker-2")
        activity = doc["nodes"][0]["activity"]
        assert activity["tool"] == "bash" and activity["stalled"] is False
        assert activity["seconds"] < 60  # not the replayed 7 minutes
        block = render_status(doc).split("\n\n")[1].splitlines()
        assert re.fullmatch(r"  working · bash 00:00:\d\d", block[1])
        node = sup.names.node(worker.id)
        progress = sup.progress_watch.progress(worker.id)
        later = status_document(doc["run_id"], doc["session"],
                                [(node, progress)], now=node.created_at + 425)
        activity = later["nodes"][0]["activity"]
        assert activity["stalled"] is True
        block = render_status(later).split("\n\n")[1].splitlines()
        assert re.fullmatch(r"  working · bash 00:0[7-9]:\d\d", block[1])
        assert block[2] == (
            f"  stuck {int(activity['seconds'] // 60)}m in bash — steer cannot reach a running "
            "tool call; abort can (legion abort worker-2)"
        )


async def test_root_operations_for_the_dashboard(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        ops = RootOperations(sup)
        w = await stuck_worker(sup, "w")
        assert await ops.act("steer", w.id, text="hi") == (
            "Steer queued for w's next turn boundary."
        )
        assert (await ops.act("abort", w.id)).startswith("Aborted w's current turn")
        assert await ops.act("stop", w.id) == "Stopped w."
        with pytest.raises(OpError):
            await ops.act("stop", ROOT_ID)  # the host is not a child of itself
        with pytest.raises(OpError, match="field 'text' is required"):
            await ops.act("steer", w.id)  # the socket's own check of its fields


async def test_abort_timeout_on_a_tool_that_ignores_cancellation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real `pi` child (the fake one, `stubborn` mode) whose running tool never honours
    the interrupt: the receipt says so after the 5 s bound, and the child stays alive."""
    from process_helpers import put_fake_pi_on_path

    monkeypatch.setenv("PATH", put_fake_pi_on_path(tmp_path / "bin"))
    monkeypatch.setenv("FAKE_PI_MODE", "stubborn")
    monkeypatch.setenv("FAKE_PI_TOOL_SECONDS", "600")
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "piw.md").write_text(
        "---\nname: piw\ndescription: a pi worker\nkind: pi\nrole: worker\n---\nWork.\n",
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        p = await spawn_one(sup, "piw", name="worker-2")
        assert sup.names.node(p.id).backend == "pi-rpc"
        await until(lambda: bool(sup.model.nodes[p.id].progress.in_flight), 30, "pi in a tool")
        outcome, receipt = await sup.control.abort(ROOT_ID, "worker-2")
        assert outcome == "timeout"
        assert receipt == (
            "Abort sent to worker-2, but it had not settled within 5s — the running tool may "
            "ignore cancellation; use stop (or stop with force) if it must die."
        )
        assert sup.names.node(p.id).live
        assert await sup.stops.stop(ROOT_ID, "worker-2", force=True) == "Stopped worker-2."
