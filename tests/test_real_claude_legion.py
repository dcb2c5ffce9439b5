"""Legion runs the real Claude Code end to end (`kind: claude`, backend claude-stream): a
settled run, inspect on Claude's own file, abort, steer, stop, resume, an API error.

The real pinned `claude` binary, launched by an in-process Supervisor from an explicit
`kind: claude` project card, talking to the scripted model server (Anthropic Messages
dialect). Every wait is bounded and on a condition; every host checks that no agent
process outlives it (`agent_host`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from claude_env import MODEL, ClaudeWorld, claude_env, claude_world, drop_claude_settings
from model_server import Hang, ModelServer, Reply, Status, Text, ToolCall
from real_pi_helpers import (
    START_LIMIT,
    TURN_LIMIT,
    agent_host,
    by_env,
    events_of,
    hand_over_and_take_back,
    live_rate,
    released_then_woken,
    settle,
    until,
    use_env,
    verdict_line,
    write_card,
)
from supervisor_helpers import GIT_ENV, LEGION

from legion_tui.model import EventType, MailState, NodeStatus
from legion_tui.model_records import Node
from legion_tui.session.reader import read_session
from legion_tui.supervisor.backends.common import RESUME_PROMPT
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real

API_RETRIES = 10  # Claude sends a 400 six times before it gives up: script more than that


@dataclass
class ClaudeLegion:
    """One test's model server, Claude Code environment and project (with the card)."""

    server: ModelServer
    claude: ClaudeWorld
    project: Path
    marker: str  # the worker card's body marker
    env: dict[str, str]  # a user's shell: Claude on PATH, pointed at the server

    def session_file(self, session_id: str) -> Path:
        """Where Claude, run in the project (a worker's cwd), writes that session."""
        return self.claude.session_file(session_id, cwd=self.project)


@pytest.fixture
def world(server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ClaudeLegion:
    claude = claude_world(tmp_path)
    env = claude_env(claude, server.origin)
    drop_claude_settings(monkeypatch)
    use_env(env, monkeypatch)  # the Supervisor's children inherit os.environ
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                   env={**env, **GIT_ENV})  # fmt: skip
    marker = write_card(
        project, tools=("bash",), kind="claude", command=("claude", "--model", MODEL)
    )
    return ClaudeLegion(server, claude, project, marker, {**env, **GIT_ENV})


async def spawn_claude(sup: Supervisor, name: str, task: str) -> Node:
    (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", task, name=name)])
    assert node.kind == "claude" and node.backend == "claude-stream", node
    assert node.status is not NodeStatus.FAILED, node.error
    return node


def claude_file(world: ClaudeLegion, node: Node) -> Path:
    """The file the node's session link points at: Claude's own, where the test itself
    computes it should be (config dir / projects / slug of the cwd / <session id>)."""
    link = Path(node.session_file or "")
    assert link.is_symlink(), f"{link} is not a link"
    target = Path(os.readlink(link))
    assert target == world.session_file(target.stem), target
    return target


def claude_call_span_ms(path: Path) -> float:
    """The file's last model call as Claude stamped it: its `api-request` line → the last
    assistant line naming that request (notes/agent-clis.md §1.8)."""

    def stamp_ms(line: dict[str, Any]) -> float:
        return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp() * 1e3

    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text]
    ref = [line for line in lines if line.get("type") == "assistant"][-1]["requestRef"]
    (request,) = [ln for ln in lines if ln.get("type") == "api-request" and ln["id"] == ref]
    answers = [ln for ln in lines if ln.get("type") == "assistant" and ln["requestRef"] == ref]
    return stamp_ms(answers[-1]) - stamp_ms(request)


async def legion(world: ClaudeLegion, *args: str, limit: float = 60.0) -> tuple[int, str, str]:
    """`legion ARGS` as a user's shell runs it in the project."""
    proc = await asyncio.create_subprocess_exec(
        LEGION, *args, cwd=world.project, env=world.env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(proc.communicate(), limit)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def tool_results(request_messages: list[object]) -> list[dict[str, object]]:
    return [
        block
        for message in request_messages
        if isinstance(message, dict) and message.get("role") == "user"
        and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]  # fmt: skip


# ----- (a) settles with the verdict, (g) the card reaches Claude, (b) inspect --------------
async def test_run_settles_ok_then_inspect_gives_the_servers_tokens_and_rate(
    world: ClaudeLegion,
) -> None:
    final = f"I wrote hello.txt.\n{verdict_line('wrote hello.txt')}"
    outside = world.project / "not-allowed.txt"
    world.server.script(
        Reply([Text("I'll write it.", tokens=3),
               ToolCall("Bash", {"command": "printf hi > hello.txt", "description": "write"},
                        id="toolu_bash_1", tokens=6)]),
        # Write is not in the card's tools: Claude asks (no bypass is added), the node
        # waits for its user, and the answer "no" denies it.
        ToolCall("Write", {"file_path": str(outside), "content": "no"}, id="toolu_write_1"),
        Text(final, tokens=12, tokens_per_second=200),
    )  # fmt: skip
    # 6 s of stream: Claude's fixed costs around the request (its record written before the
    # send, its lines after the stream; ~50 ms, up to ~170 ms on a loaded machine) stay a
    # small share of the generation time the file gives (3 s once measured 94.7 tok/s).
    tokens, rate = 600, 100.0
    body = "".join(f"w{i} " for i in range(tokens))
    async with agent_host(world.project) as sup:
        began = time.monotonic()
        node = await spawn_claude(sup, "writer", "Create hello.txt containing hi.")
        started = time.monotonic() - began
        await until(
            lambda: sup.names.node(node.id).status is NodeStatus.BLOCKED,
            TURN_LIMIT,
            "Claude to ask",
        )
        outcome, _receipt = await sup.control.steer(ROOT_ID, "writer", "no")
        assert outcome in ("accepted", "queued"), outcome
        done = await settle(sup, node.id)
        took = time.monotonic() - began
        print(f"claude: start {started:.1f} s, settle ok {took:.1f} s")
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None
        assert (json.loads(done.verdict)["ok"], json.loads(done.verdict)["reason"]) == (
            True,
            "wrote hello.txt",
        )
        assert (world.project / "hello.txt").read_text() == "hi"
        assert not outside.exists()
        rs = world.server.requests()
        assert [r.state for r in rs] == ["completed"] * 3 and world.server.unscripted() == []
        # (g) the card's body is in the system prompt, Bash among the tools, and only the
        # allowed tool ran: the Write call came back refused.
        for r in rs:
            assert r.dialect == "anthropic-messages" and r.model == MODEL
            assert r.system_prompt is not None and world.marker in r.system_prompt
            assert "Bash" in r.tool_names
        assert [(b["tool_use_id"], b.get("is_error", False)) for b in tool_results(rs[1].messages)
                ] == [("toolu_bash_1", False)]  # fmt: skip
        (refused,) = [
            b for b in tool_results(rs[2].messages) if b["tool_use_id"] == "toolu_write_1"
        ]
        assert refused.get("is_error") is True, refused
        path = claude_file(world, done)
        p = read_session(done.session_file or "")
        assert p.format == "claude" and p.skipped_lines == 0
        assert p.tokens.output == sum(r.output_tokens for r in rs) == 9 + 4 + 12
        assert p.verdict is not None and p.verdict.reason == "wrote hello.txt"

        # (b) a second node streams 300 tokens at 100 tok/s.
        world.server.script(
            Text(f"{body}\n{verdict_line('streamed')}", tokens=tokens, tokens_per_second=rate)
        )
        since = sup.model.clock()
        node = await spawn_claude(sup, "talker", "Talk for a while, then give a verdict.")
        live = await live_rate(sup, node.id, tokens, since)
        print(f"claude: live {live:.1f} tok/s (server {rate:g})")
        view = sup.model.nodes[node.id]
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert view.streaming is None  # the file's exact figures took over
        request = world.server.requests()[-1]
        assert request.state == "completed" and request.output_tokens == tokens
        link = Path(done.session_file or "")
        talker_file = claude_file(world, done)
        assert talker_file != path  # one session per node
        p = read_session(link)
        figures = (f"claude: file {p.tokens.output} tokens, {p.tok_s:.2f} tok/s over "
                   f"{p.generation_ms:.0f} ms (server {tokens} at {rate:g} tok/s = "
                   f"{tokens / rate * 1000:.0f} ms)")  # fmt: skip
        print(figures)
        assert p.tokens.output == tokens and p.turns == 1, figures
        # The file's figures, not a clock's: the call's span is Claude's own stamps. Claude
        # stamps its request when it gets to it, which a loaded machine puts after the
        # stream began (a soak run: 5 454 ms of a 6 000 ms stream, 110 tok/s), so the
        # server's pacing bounds nothing: it is printed beside them.
        assert request.finished_at is not None
        served_ms = (request.finished_at - request.received_at) * 1000
        span_ms = claude_call_span_ms(talker_file)
        print(f"claude: its stamps span {span_ms:.0f} ms, the server streamed {served_ms:.0f} ms")
        assert p.generation_ms == pytest.approx(span_ms), figures
        assert p.tok_s == pytest.approx(tokens / (span_ms / 1000)), figures
        code, out, err = await legion(world, "inspect", "--json", str(link), limit=30)
        assert code == 0, err
        report = json.loads(out)
        assert report["format"] == "claude"
        assert report["tokens"]["output"] == tokens
        assert report["tok_s"] == pytest.approx(p.tok_s), report
        assert (report["verdict"]["ok"], report["verdict"]["reason"]) == (True, "streamed")
        row = sup.queries.status(ROOT_ID, "talker")["nodes"][0]
        assert row["tokens_out"] == tokens and row["tok_s"] == round(report["tok_s"], 1), row


# ----- (d) steer mid-turn, (c) abort mid-turn, steer when idle ----------------------------
async def test_steer_mid_turn_reaches_the_model_and_abort_interrupts_it(
    world: ClaudeLegion, caplog: pytest.LogCaptureFixture
) -> None:
    mid = "STEER-MID: also mention bananas"
    world.server.script(
        Reply([Text("Running it.", tokens=2),
               # 4 s: long enough for Claude to report it as a (foreground) task, whose
               # notification must not read as a background one's (no turn follows it).
               ToolCall("Bash", {"command": "sleep 4; printf done > slow.txt",
                                 "description": "the slow command"}, id="toolu_slow")]),
        Text(f"Done, and bananas.\n{verdict_line('mentioned bananas')}"),
        Hang(before=Text("Thinking about it for a long while", tokens=6)),
        Text(f"Still here.\n{verdict_line('still here')}"),
    )  # fmt: skip
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "steered", "Run the slow command.")
        # The tool_use line is in Claude's file while the command runs.
        await until(
            lambda: [t.name for t in sup.progress_watch.progress(node.id).in_flight] == ["Bash"],
            START_LIMIT,
            "Claude inside its Bash call",
        )
        outcome, receipt = await sup.control.steer(ROOT_ID, "steered", mid)
        assert outcome == "queued", receipt
        assert len(world.server.requests()) == 1  # nothing reached the model yet
        done = await settle(sup, node.id)
        answered = world.server.requests()[1].finished_at
        assert answered is not None
        lag = time.monotonic() - answered
        print(f"claude: settled {lag * 1000:.0f} ms after the last answer")
        # Settled by the answer's own result, not by the bound that waits for a turn
        # answering a task notification (the foreground task's must not start it).
        late = [r for r in caplog.records if "did not answer a task notification" in r.message]
        assert late == [], f"settled {lag:.1f} s after the answer, by the notification's bound"
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "mentioned bananas" in done.verdict
        assert (world.project / "slow.txt").read_text() == "done"
        rs = world.server.requests()
        # Within the same turn: the request after the tool result carried the steer, and
        # no third request (a turn of its own) was made for it.
        assert len(rs) == 2, [r.last_user_text() for r in rs]
        assert mid in json.dumps(rs[1].messages) and mid not in json.dumps(rs[0].messages)
        assert mid in sup.progress_watch.progress(node.id).recent_user_texts  # the file says it too

        # Idle: a steer is a new turn; then abort it mid-stream.
        outcome, receipt = await sup.control.steer(
            ROOT_ID, "steered", "Now think for a long while."
        )
        assert outcome == "accepted", receipt
        await asyncio.to_thread(world.server.wait_for_hang, timeout=TURN_LIMIT)
        await until(lambda: sup.names.node(node.id).status is NodeStatus.RUNNING, 10, "running")
        began = time.monotonic()
        outcome, receipt = await sup.control.abort(ROOT_ID, "steered")
        took = time.monotonic() - began
        print(f"claude: abort → {outcome} in {took * 1000:.0f} ms: {receipt}")
        assert outcome == "interrupted", receipt
        assert "queued messages kept" not in receipt  # nothing was queued
        await asyncio.to_thread(
            world.server.wait_for, lambda rs: rs[2].state == "disconnected", 5, "stream closed"
        )
        # Aborted is not done: the node keeps its context, live, and idle.
        await until(
            lambda: sup.progress_watch.progress(node.id).last_stop_reason == "aborted",
            10,
            "the interrupt in Claude's file",
        )
        await until(lambda: sup.queries.status(ROOT_ID, "steered")["nodes"][0]["idle"] is True, 5,
                    "the row to say idle")  # fmt: skip
        assert sup.names.node(node.id).status is NodeStatus.RUNNING
        assert events_of(sup, node.id).count(EventType.NODE_SETTLED) == 1
        # The session lives on and takes the next prompt.
        outcome, receipt = await sup.control.steer(ROOT_ID, "steered", "Are you still there?")
        assert outcome == "accepted", receipt
        await until(
            lambda: "still here" in (sup.names.node(node.id).verdict or ""),
            TURN_LIMIT,
            "settled again",
        )
        assert sup.names.node(node.id).status is NodeStatus.SETTLED
        rs = world.server.requests()
        assert len(rs) == 4 and world.server.unscripted() == []
        assert "Are you still there?" in rs[3].last_user_text()
        assert "[Request interrupted by user]" in json.dumps(rs[3].messages)


async def test_abort_keeps_a_queued_steer_which_runs_next_and_the_node_settles_on_it(
    world: ClaudeLegion,
) -> None:
    """Claude cannot drop queued lines: the receipt says they are kept, and the kept steer
    (never echoed before the interrupt) runs as the next turn — not idle in between."""
    world.server.script(
        Hang(before=Text("Thinking about it for a long while", tokens=6)),
        Text(f"Queued steer answered.\n{verdict_line('queued steer answered')}"),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "kept", "Think for a long while.")
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        outcome, receipt = await sup.control.steer(ROOT_ID, "kept", "STEER-KEPT: then answer this")
        assert outcome == "queued", receipt
        outcome, receipt = await sup.control.abort(ROOT_ID, "kept")
        assert outcome == "interrupted", receipt
        assert receipt.endswith("queued messages kept: this agent cannot clear its queue")
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "queued steer answered" in done.verdict
        rs = world.server.requests()
        assert len(rs) == 2 and "STEER-KEPT" in rs[1].last_user_text()
        assert events_of(sup, node.id).count(EventType.NODE_SETTLED) == 1


# ----- (e) stop leaves nothing, (f) resume appends to the same file -----------------------
async def test_stop_leaves_no_process_and_resume_appends_to_the_same_file(
    world: ClaudeLegion,
) -> None:
    task = "TASK-c1a7: write one.txt, then wait for more."
    world.server.script(
        ToolCall(
            "Bash",
            {"command": "sleep 20; printf late > late.txt", "description": "sleep"},
            id="toolu_sleep",
        ),
        ToolCall("Bash", {"command": "printf one > one.txt", "description": "one"}),
        Hang(before=Text("Waiting", tokens=2)),
        Text(f"Done.\n{verdict_line('resumed and done')}"),
    )
    async with agent_host(world.project) as sup:
        # (e) a node inside a long Bash call: stop ends Claude and the command.
        sleeper = await spawn_claude(sup, "sleeper", "Sleep.")
        progress = sup.progress_watch.progress
        await until(lambda: [t.name for t in progress(sleeper.id).in_flight] == ["Bash"],
                    START_LIMIT, "Claude inside its Bash call")  # fmt: skip
        pid = sup.names.node(sleeper.id).pid
        assert pid is not None

        def names() -> set[str]:
            found = set()
            for p in by_env("LEGION_NODE_ID", sleeper.id):
                with contextlib.suppress(psutil.Error):
                    found.add(psutil.Process(p).name())
            return found

        await until(lambda: "sleep" in names(), 10, "the Bash tool's `sleep` to run")
        began = time.monotonic()
        assert await sup.stops.stop(ROOT_ID, "sleeper") == "Stopped sleeper."
        print(f"claude: stop in {(time.monotonic() - began) * 1000:.0f} ms")
        assert by_env("LEGION_NODE_ID", sleeper.id) == []
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        assert sup.names.node(sleeper.id).status is NodeStatus.RETIRED

        # (f) stopped mid-turn, resumed: the same file grows, the task is not sent again.
        node = await spawn_claude(sup, "resumed", task)
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        path = claude_file(world, sup.names.node(node.id))
        assert await sup.stops.stop(ROOT_ID, "resumed") == "Stopped resumed."
        before = path.read_bytes()
        assert b"TASK-c1a7" in before
        receipt = await sup.control.resume(ROOT_ID, "resumed")
        assert receipt.startswith("Resumed resumed on its session file"), receipt
        # Requests: the sleeper's one, then this node's Bash, its Hang, and the resumed one.
        rs = await asyncio.to_thread(world.server.wait_for_requests, 4, timeout=START_LIMIT)
        assert RESUME_PROMPT in rs[3].last_user_text()
        assert json.dumps(rs[3].messages).count("TASK-c1a7") == 1  # restored, not resent
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "resumed and done" in done.verdict
        assert claude_file(world, done) == path  # the same file, no second session
        assert sorted(path.parent.glob("*.jsonl")) == sorted(
            {path, claude_file(world, sup.names.node(sleeper.id))}
        )
        after = path.read_bytes()
        assert after.startswith(before) and len(after) > len(before)
        assert after.count(RESUME_PROMPT.encode()) >= 1
        p = read_session(path)
        assert p.verdict is not None and p.verdict.reason == "resumed and done"
        assert (world.project / "one.txt").read_text() == "one"
        assert world.server.unscripted() == []


# ----- a background subagent: the node settles on Claude's own follow-up turn -------------
async def test_a_background_subagent_keeps_the_node_busy_until_its_notification_turn(
    world: ClaudeLegion,
) -> None:
    """2.1.328 runs a Task subagent in the background: the launching turn ends (a `result`)
    while it works, and Claude answers its completion with a turn of its own. Settling on
    the first `result` would take "Waiting" for the answer."""
    waiting = "Waiting for the subagent."  # both the main turn's and the subagent's reply:
    # their two requests race for the script, so the same item answers either
    world.server.script(
        ToolCall("Task", {"description": "sub job", "prompt": "Say hi.",
                          "subagent_type": "general-purpose"}, id="toolu_task"),
        Text(waiting),
        Text(waiting),
        Text(f"The subagent said hi.\n{verdict_line('subagent done')}"),
    )  # fmt: skip
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "delegator", "Have a subagent say hi.")
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "subagent done" in done.verdict, done.verdict
        assert events_of(sup, node.id).count(EventType.NODE_SETTLED) == 1
        rs = world.server.requests()
        assert len(rs) == 4 and world.server.unscripted() == []
        assert "task-notification" in json.dumps(rs[3].messages)
        # The subagent's own transcript is a file of its own (not the node's figures).
        path = claude_file(world, done)
        (sub,) = (path.parent / path.stem / "subagents").glob("agent-*.jsonl")
        sub_progress = read_session(sub)
        assert sub_progress.last_text == waiting and sub_progress.turns == 1


# ----- (h) an API error fails the node with the API's message -----------------------------
async def test_api_error_fails_the_node_with_the_apis_message(world: ClaudeLegion) -> None:
    world.server.script(*[Status(400, "scripted: bad request LEGION-400")] * API_RETRIES)
    write_card(world.project, "broken", tools=("bash",), kind="claude",
               command=("claude", "--no-such-flag"))  # fmt: skip
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "failing", "Say something.")
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.FAILED, (done.status, done.error)
        assert done.error is not None
        assert "API Error: 400" in done.error and "LEGION-400" in done.error, done.error
        print(f"claude: API error → failed: {done.error}")
        rs = world.server.requests()
        assert rs and all(r.state == "error-reply" for r in rs), [r.state for r in rs]
        p = read_session(done.session_file or "")
        assert p.last_stop_reason == "error" and "LEGION-400" in p.last_text
        assert not p.empty_generation and p.tokens.output == 0
        # The process lived on (a failed turn, not a crash) until the node was failed.
        assert sup.names.node(node.id).pid is not None

        # A launch Claude refuses fails the node with Claude's own words, nothing left.
        (broken,) = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("broken", "Anything.", name="b")]
        )
        assert broken.status is NodeStatus.FAILED, broken
        assert broken.error is not None and "--no-such-flag" in broken.error, broken.error
        print(f"claude: refused launch → {broken.error}")
        assert by_env("LEGION_NODE_ID", broken.id) == []
        assert len(world.server.requests()) == len(rs)  # it never reached the model


# ----- the flags a card gives are left alone ----------------------------------------------
def test_claude_argv_adds_only_what_the_card_did_not_give(tmp_path: Path) -> None:
    from legion_tui.supervisor.backend import LaunchSpec
    from legion_tui.supervisor.backends.claude.argv import claude_argv

    def spec(command: list[str] | None, **kw: object) -> LaunchSpec:
        return LaunchSpec(
            node_id="n1", run_id="r1", name="w", role="worker", kind="claude", task="t",
            session_file=tmp_path / "n1.jsonl", run_dir=tmp_path, cwd=tmp_path,
            socket_path=tmp_path / "s.sock", command=command, **kw,  # type: ignore[arg-type]
        )  # fmt: skip

    argv = claude_argv(spec(None, system_prompt="-- card body", tools=("bash", "find", "Read")),
                       "sid-1", resume=False)  # fmt: skip
    assert argv == [
        "claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json",
        "--verbose", "--include-partial-messages", "--replay-user-messages",
        "--session-id", "sid-1", "--append-system-prompt=-- card body",
        "--allowedTools=Bash,Glob,Read", "--permission-prompt-tool=stdio",
    ]  # fmt: skip
    argv = claude_argv(
        spec(["claude", "--print", "--allowedTools", "Bash(git *)", "--model", "m",
              "--dangerously-skip-permissions"], tools=("bash",)),
        "sid-2", resume=True,
    )  # fmt: skip
    assert argv[:7] == ["claude", "--print", "--allowedTools", "Bash(git *)", "--model", "m",
                        "--dangerously-skip-permissions"]  # fmt: skip
    assert "-p" not in argv and argv.count("--allowedTools") == 1
    assert argv[-2:] == ["--resume", "sid-2"]
    assert not [a for a in argv[7:] if "dangerously" in a or "bypass" in a]
    assert "--permission-prompt-tool=stdio" not in argv  # a bypassing card is never asked
    # `permissions:` (issue 31 item 5): allowed-tools denies unasked; never-ask bypasses.
    argv = claude_argv(spec(None, tools=("bash",), permissions="allowed-tools"), "s", resume=False)
    assert "--permission-prompt-tool=stdio" not in argv and "bypassPermissions" not in argv
    argv = claude_argv(spec(None, tools=("bash",), permissions="never-ask"), "s", resume=False)
    assert argv[-2:] == ["--permission-mode", "bypassPermissions"]
    assert "--permission-prompt-tool=stdio" not in argv
    argv = claude_argv(spec(None, tools=("bash",), permissions="ask"), "s", resume=False)
    assert argv[-1] == "--permission-prompt-tool=stdio"


# ----- mail: a letter to a working Claude reaches it and DELIVERED ---------------------------
async def test_a_letter_to_a_working_claude_is_delivered_and_answered(world: ClaudeLegion) -> None:
    """Mail goes to Claude as a user line on its stdin; the postman sees the envelope in
    Claude's own session file (a user text) and moves the letter to DELIVERED."""
    # A letter bounces from an ended node: it is sent while the worker's tool runs. The
    # agent takes it inside the turn or as the next one: both answers say they read it.
    read = Text(f"Got the letter.\n{verdict_line('read the letter')}", tokens=5)
    wait = ToolCall("Bash", {"command": "sleep 2", "description": "wait"}, tokens=4)
    world.server.script(wait, read, read)
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "reader", "Wait two seconds, then read your mail.")
        view = sup.model.nodes[node.id]
        await until(lambda: bool(view.progress.in_flight), TURN_LIMIT, "the running tool")
        sent = await sup.mail.send(ROOT_ID, "reader", "fixture ready", "tests/data/x.json")
        assert sent["state"] == "accepted", sent  # handed to the running agent

        async def delivered() -> bool:
            (letter,) = await sup.ledger.get_messages(node.id)
            return letter.delivered is MailState.DELIVERED

        deadline = time.monotonic() + TURN_LIMIT
        while not await delivered():
            assert time.monotonic() < deadline, "the letter never reached DELIVERED"
            await asyncio.sleep(0.05)
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert json.loads(done.verdict or "{}")["reason"] == "read the letter"
        last = world.server.requests()[-1]
        assert "fixture ready" in json.dumps(last.messages)  # the letter reached the model


# ----- attach's two ends (issue 31 item 1) -----------------------------------------------------
async def test_a_hand_over_ends_the_agent_and_the_take_back_has_it_idle_and_steerable(
    world: ClaudeLegion,
) -> None:
    world.server.script(
        Text(f"First.\n{verdict_line('first')}", tokens=4),
        Text(f"Again.\n{verdict_line('followed up')}", tokens=4),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "handed", "Say first.")
        await settle(sup, node.id)
        await hand_over_and_take_back(sup, node.id, world.server, ui="claude")


async def test_an_idle_agent_is_released_and_a_follow_up_starts_it_again(
    world: ClaudeLegion,
) -> None:
    world.server.script(
        Text(f"First.\n{verdict_line('first')}", tokens=4),
        Text(f"Again.\n{verdict_line('followed up')}", tokens=4),
        Text(f"Read.\n{verdict_line('letter read')}", tokens=4),
    )
    async with agent_host(world.project) as sup:
        sup.ctx.options.idle_release = 0.5
        node = await spawn_claude(sup, "idler", "Say first.")
        await settle(sup, node.id)
        await released_then_woken(sup, node.id, world.server)


# ----- Claude Code's own cost (issue 32 item 1) ---------------------------------------------
PRICED_MODEL = "claude-sonnet-4-5"  # a model Claude Code prices: its total_cost_usd is real


def cost_states(path: Path) -> list[float]:
    """The running totals Claude Code wrote in its own file (one per process exit)."""
    return [json.loads(line)["totalCostUSD"] for line in path.read_text().splitlines()
            if '"cost-state"' in line]  # fmt: skip


async def test_the_cost_is_claudes_own_figure_live_and_after_it_exits(
    world: ClaudeLegion,
) -> None:
    """Each turn's `result.total_cost_usd` is the node's cost at once (reported, not
    est.), a resumed process goes on from it, and it is the very total Claude writes in
    its file when it exits — which a reopened host reads back the same."""
    write_card(world.project, tools=("bash",), kind="claude",
               command=("claude", "--model", PRICED_MODEL))  # fmt: skip
    world.server.script(
        Text(f"First.\n{verdict_line('first')}", tokens=4),
        Text(f"Again.\n{verdict_line('followed up')}", tokens=4),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_claude(sup, "payer", "Say first.")
        await settle(sup, node.id)
        view = sup.model.nodes[node.id]
        first = view.progress.cost
        assert first > 0 and view.progress.cost_basis == "reported", view.progress
        path = claude_file(world, sup.names.node(node.id))
        assert cost_states(path) == []  # not in its file yet: the figure came live
        await sup.control.steer(ROOT_ID, "payer", "And again.")
        await until(lambda: len(world.server.requests()) >= 2, TURN_LIMIT, "the second turn")
        await settle(sup, node.id)
        await until(lambda: view.progress.cost > first, TURN_LIMIT, "the second turn's cost")
        live = view.progress.cost
        assert "payer" in await sup.stops.stop(ROOT_ID, "payer")  # its process exits
        assert cost_states(path) == [pytest.approx(live)]  # Claude's own, as shown live
        assert sup.ctx.ledger is not None
        await sup.ctx.ledger.flush()
        stored = await sup.ctx.ledger.get_usage(node.id)
        assert stored is not None and stored.cost == pytest.approx(live)
    async with agent_host(world.project) as again:
        progress = again.progress_watch.progress(node.id)
        assert progress.cost == pytest.approx(live) and progress.cost_basis == "reported"


async def test_the_runs_budget_stops_a_claude_worker_within_one_model_call(
    world: ClaudeLegion,
) -> None:
    """Issue 32 item 2 with the real Claude Code: under a $0.001 run budget, the first
    priced call passes it (its estimate is read from Claude's file as the call ends:
    Claude's own total comes only with the turn's end); the worker is stopped inside
    the command that call started, before a second call; the next spawn is refused
    naming the figures, and the limit raised in the settings admits one again."""
    from legion_tui.model import EventType
    from legion_tui.wire.names import OpError

    write_card(world.project, tools=("bash",), kind="claude",
               command=("claude", "--model", PRICED_MODEL))  # fmt: skip
    settings = world.project / ".legion" / "settings.toml"
    settings.write_text("[budget]\nusd = 0.001\n")
    world.server.script(
        # A command that takes a while, as real ones do (the scripted calls take
        # milliseconds): the first call's cost is read while it runs.
        ToolCall("Bash", {"command": "sleep 5; printf 1", "description": "one"}, tokens=4),
    )
    async with agent_host(world.project) as sup:
        assert sup.model.budget_usd == 0.001  # the header shows it from the start

        def breaches() -> list[dict[str, object]]:
            return [e.data for e in sup.model.nodes[sup.model.root_id].events
                    if e.type is EventType.BUDGET_EXCEEDED]  # fmt: skip

        node = await spawn_claude(sup, "spender", "Run two commands.")
        await until(lambda: bool(breaches()), TURN_LIMIT, "the run's budget event")
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.RETIRED, (done.status, done.error)
        (breach,) = breaches()
        stopped_at = sup.model.nodes[node.id].progress.cost
        print(f"budget timeline (claude): limit $0.001 · spent at the breach "
              f"${breach['spent_usd']} · when the worker had stopped ${stopped_at:.6f} · "
              f"model calls {len(world.server.requests())}")
        assert float(str(breach["spent_usd"])) > 0.001
        assert len(world.server.requests()) == 1  # stopped within one model call
        with pytest.raises(OpError) as refused:
            await spawn_claude(sup, "second", "Say second.")
        assert refused.value.code == "BUDGET" and "over budget: the run spent" in (
            refused.value.message)
        settings.write_text("[budget]\nusd = 10\n")
        world.server.script(Text(f"Second.\n{verdict_line('after the raise')}", tokens=4))
        second = await spawn_claude(sup, "second", "Say second.")
        assert sup.model.budget_usd == 10
        assert (await settle(sup, second.id)).status is NodeStatus.SETTLED
