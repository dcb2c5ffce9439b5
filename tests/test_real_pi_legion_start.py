"""Legion runs the real pi (both pinned lines) end to end (issue 9, part 2): provider
retries, six nodes at once, the card reaching the model, and a node before pi's first
write (its row, its stop, its resume).

Real `pi --mode rpc` processes under an in-process Supervisor, from explicit `kind: pi`
project cards, against the scripted model server; every wait is bounded and every host
checks that no agent process outlives it.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from model_server import Hang, Status, Text
from real_pi_helpers import (
    PI_TOOLS,
    START_LIMIT,
    TURN_LIMIT,
    PiWorld,
    by_env,
    entries,
    events_of,
    link_state,
    pi_host,
    pi_session_files,
    settle,
    spawn_pi,
    until,
    verdict_line,
    write_card,
)
from supervisor_helpers import run_cli

from legion_tui import receipts
from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.backends.common import RESUME_PROMPT
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real

SIX = 6
# How many HTTP requests one pi attempt makes when the provider answers 503: pi 0.73's
# OpenAI SDK retries twice by itself (x-stainless-retry-count 0, 1, 2) before pi sees an
# error; pi 1.6 hands the SDK maxRetries 0 and retries only on its own.
SDK_TRIES = {"0.73": 3, "1.6": 1}
# pi 0.73 creates its session file with its first answer; 1.6 already at the prompt (the
# header, its system prompt and the user message), before the model has said anything.
WRITES_AT_PROMPT = {"0.73": False, "1.6": True}


def ok_reply(reason: str) -> Text:
    return Text(f"Done.\n{verdict_line(reason)}")


# ----- 7. provider errors: pi's own retry -------------------------------------------------
async def test_two_503s_then_success_settles_ok_through_pis_own_retry(world: PiWorld) -> None:
    pi_errors = 2  # pi itself sees two errors, so its auto-retry runs twice
    statuses = [Status(503, "scripted overload") for _ in range(pi_errors * SDK_TRIES[world.line])]
    world.server.script(*statuses, ok_reply("after retries"))
    async with pi_host(world) as sup:
        node = await spawn_pi(sup, "retrier", "Say done.")
        done = await settle(sup, node.id, limit=TURN_LIMIT)
        kinds = events_of(sup, node.id)
        assert EventType.NODE_FAILED not in kinds, (done.error, kinds)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and json.loads(done.verdict)["ok"] is True
        assert kinds.count(EventType.NODE_SETTLED) == 1, kinds
        requests = world.server.requests()
        assert [r.state for r in requests] == ["error-reply"] * len(statuses) + ["completed"]
        # pi's own attempts start the SDK's count afresh: 1 + pi's retries of them.
        fresh = [r for r in requests if r.headers.get("x-stainless-retry-count", "0") == "0"]
        assert len(fresh) == 1 + pi_errors
        # pi wrote each failed attempt to its file, then the answer.
        (pi_file,) = pi_session_files(sup, node.id)
        stops = [
            e["message"].get("stopReason")
            for e in entries(pi_file)
            if e.get("type") == "message" and e["message"].get("role") == "assistant"
        ]
        assert stops == ["error"] * pi_errors + ["stop"], stops


# ----- 8. six at once ---------------------------------------------------------------------
async def _six_settle(world: PiWorld, batch: bool) -> None:
    world.server.script(*(ok_reply(f"answer {i}") for i in range(SIX)))
    names = [f"six-{i}" for i in range(SIX)]
    async with pi_host(world) as sup:
        if batch:
            nodes = await sup.launcher.spawn(
                ROOT_ID, [ChildRequest("worker", f"Job {n}.", name=n) for n in names]
            )
        else:
            spawned = await asyncio.gather(*(spawn_pi(sup, n, f"Job {n}.") for n in names))
            nodes = list(spawned)
        assert [n.name for n in nodes] == names
        launch_errors = {n.name: n.error for n in nodes if n.status is NodeStatus.FAILED}
        assert launch_errors == {}, launch_errors
        for n in nodes:  # each went live: a launch event, a pid, the pi backend
            assert EventType.NODE_LAUNCHED in events_of(sup, n.id), n.name
            assert n.backend == "pi-rpc" and n.pid is not None
        for n in nodes:
            done = await settle(sup, n.id, limit=TURN_LIMIT)
            assert done.status is NodeStatus.SETTLED, (n.name, done.status, done.error)
            assert done.verdict is not None and json.loads(done.verdict)["ok"] is True
            assert len(pi_session_files(sup, n.id)) == 1, n.name
        assert len({n.pid for n in nodes}) == SIX
        assert sum(r.state == "completed" for r in world.server.requests()) == SIX
        assert world.server.unscripted() == []


async def test_six_nodes_in_one_spawn_all_go_live_and_settle(world: PiWorld) -> None:
    await _six_settle(world, batch=True)


async def test_six_concurrent_spawns_all_go_live_and_settle(world: PiWorld) -> None:
    await _six_settle(world, batch=False)


# ----- 9. the card reaches the model -------------------------------------------------------
async def test_the_cards_prompt_and_exactly_its_tools_reach_the_model(world: PiWorld) -> None:
    reader_tools = ("read", "grep", "ls")  # not pi's default set: --tools must be honoured
    reader = write_card(world.project, "reader", tools=reader_tools)
    world.server.script(ok_reply("one"), ok_reply("two"))
    async with pi_host(world) as sup:
        await sup.launcher.spawn(
            ROOT_ID,
            [
                ChildRequest("worker", "Say done.", name="w"),
                ChildRequest("reader", "Say done.", name="r"),
            ],
        )
        for name in ("w", "r"):
            done = await settle(sup, sup.names.resolve(ROOT_ID, name).id)
            assert done.status is NodeStatus.SETTLED, (name, done.error)
    requests = await asyncio.to_thread(world.server.wait_for_finished, 2, timeout=5)
    seen = {}
    for r in requests:
        prompt = r.system_prompt or ""
        assert prompt.startswith("You are"), prompt[:80]  # pi's own prompt, then the card's
        owner = [m for m in (world.marker, reader) if m in prompt]
        assert len(owner) == 1, f"card markers in one system prompt: {owner}"
        seen[owner[0]] = r.tool_names
    assert seen == {world.marker: list(PI_TOOLS), reader: list(reader_tools)}


# ----- 10. stopped before pi's first reply, then resumed --------------------------------------
async def test_a_node_stopped_before_its_first_reply_resumes_on_its_task(world: PiWorld) -> None:
    task = "TASK-a10c: say done."
    world.server.script(Hang(), ok_reply("restarted and done"))
    async with pi_host(world) as sup:
        node = await spawn_pi(sup, "early", task)
        first = await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        assert first.last_user_text() == task
        early = pi_session_files(sup, node.id)
        if WRITES_AT_PROMPT[world.line]:
            assert len(early) == 1 and task in early[0].read_text(), early
        else:
            assert early == [], early  # pi has written nothing yet
        assert await sup.stops.stop(ROOT_ID, "early") == "Stopped early."
        assert by_env("LEGION_NODE_ID", node.id) == []
        receipt = await sup.control.resume(ROOT_ID, "early")
        rs = await asyncio.to_thread(world.server.wait_for_finished, 2, timeout=START_LIMIT)
        if WRITES_AT_PROMPT[world.line]:
            # Its file holds the task: pi continues it (the task is not sent again).
            assert receipt.startswith("Resumed early on its session file"), receipt
            assert rs[1].last_user_text() == RESUME_PROMPT
            assert json.dumps(rs[1].messages).count("TASK-a10c") == 1
        else:
            assert receipt == receipts.restarted("early"), receipt
            assert rs[1].last_user_text() == task  # on its task, not "continue"
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        files = pi_session_files(sup, node.id)
        assert len(files) == 1 and "restarted and done" in files[0].read_text(), files
        assert done.verdict is not None, (
            f"settled without the verdict pi wrote: the node reads "
            f"{link_state(done.session_file)}; pi wrote {files[0].name}"
        )
        assert json.loads(done.verdict)["reason"] == "restarted and done"
        assert sup.progress_watch.progress(node.id).tokens.output > 0


# ----- 11. the row before pi's first write -------------------------------------------------
async def test_the_row_before_pis_first_answer_is_no_error(world: PiWorld) -> None:
    world.server.script(Hang())
    async with pi_host(world) as sup:
        node = await spawn_pi(sup, "quiet", "Say done.")
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        await until(lambda: sup.names.node(node.id).status is NodeStatus.RUNNING, 10, "running")
        progress = sup.progress_watch.progress(node.id)
        # 0.73 writes its file with its first answer; 1.6 writes it at the prompt.
        assert progress.not_written_yet is not WRITES_AT_PROMPT[world.line], progress
        assert progress.read_error is None
        (row,) = sup.queries.status(ROOT_ID, "quiet")["nodes"]
        unreadable = None if WRITES_AT_PROMPT[world.line] else "ENOENT"
        assert (row["status"], row["error"], row["unreadable"]) == ("running", None, unreadable)
        code, out, err = await run_cli("status", "--json", cwd=world.project, limit=30)
        assert code == 0, err
        (cli_row,) = [n for n in json.loads(out)["nodes"] if n["name"] == "quiet"]
        assert cli_row["status"] == "running" and cli_row["error"] is None, cli_row
        code, out, err = await run_cli("status", cwd=world.project, limit=30)
        assert code == 0, err
        if not WRITES_AT_PROMPT[world.line]:
            assert receipts.FIRST_ANSWER_PENDING in out, out
        assert "unreadable" not in out and "failed" not in out, out
