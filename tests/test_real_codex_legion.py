"""Legion runs the real, pinned Codex CLI end to end (issue 10): `kind: codex` nodes are
`codex app-server` processes driven by an in-process Supervisor, against the scripted
model server's Responses dialect.

Per test: a scratch HOME and CODEX_HOME (tests/codex_env.py: the `scripted` provider, the
network extras off), a git project whose worker card says `kind: codex` (no command: the
`codex` on PATH), the env applied to this process so the Supervisor's children inherit
it. Every wait is bounded and on a condition; every host checks that no process of its
run outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from codex_env import MODEL, CodexEnv, codex_env
from model_server import Hang, ModelServer, RecordedRequest, Reply, Status, Text, ToolCall
from real_pi_helpers import (
    agent_host,
    by_env,
    entries,
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
from supervisor_helpers import GIT_ENV, run_cli

from legion_tui.model import EventType, MailState, NodeStatus
from legion_tui.model_records import Node
from legion_tui.session.reader import read_session
from legion_tui.supervisor.backends.common import RESUME_PROMPT
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real

START_LIMIT = 60.0  # a cold `codex app-server` start on 2 loaded cores, then a model call
TURN_LIMIT = 60.0
CODEX_TOOLS = ("read", "bash", "edit", "write")  # the card's list; Codex keeps its own tools


@dataclass
class CodexWorld:
    server: ModelServer
    codex: CodexEnv
    project: Path
    marker: str  # the worker card's body marker


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(model_ids=(MODEL,)) as s:
        yield s
        assert s.errors() == []


@pytest.fixture
def world(server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CodexWorld:
    codex = codex_env(server.base_url, tmp_path / "codex")
    use_env(codex.env, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                   env={**codex.env, **GIT_ENV})
    marker = write_card(project, kind="codex", command=None, tools=CODEX_TOOLS)
    return CodexWorld(server, codex, project, marker)


async def spawn_codex(sup: Supervisor, name: str, task: str) -> Node:
    (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", task, name=name)])
    assert node.kind == "codex" and node.backend == "codex-app-server", node
    assert node.status is not NodeStatus.FAILED, node.error
    return node


def user_texts(request: RecordedRequest) -> list[str]:
    """The user messages of a Responses request's `input`, in order."""
    items = request.body.get("input") if isinstance(request.body, dict) else None
    texts = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            texts.append("".join(c.get("text", "") for c in content if isinstance(c, dict))
                         if isinstance(content, list) else str(content))
    return texts


def user_messages(rollout: Path, text: str) -> int:
    """How many user messages of the rollout (`response_item`s, what the model is sent)
    contain `text`."""
    return sum(
        e["type"] == "response_item" and e["payload"].get("role") == "user"
        and text in json.dumps(e["payload"].get("content"))
        for e in entries(rollout)
    )


def rollout_of(sup: Supervisor, node_id: str) -> Path:
    """The rollout file the node's session link points at (under CODEX_HOME/sessions)."""
    link = Path(sup.names.node(node_id).session_file or "")
    assert link.is_symlink(), link
    return Path(os.path.realpath(link))


async def wait_requests(world: CodexWorld, n: int, limit: float = TURN_LIMIT
                        ) -> list[RecordedRequest]:
    return await asyncio.to_thread(world.server.wait_for_requests, n, timeout=limit)


def names_of(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.append(psutil.Process(pid).name())
    return sorted(found)


def commands_of(pids: list[int]) -> list[str]:
    """`name: argv[0] argv[1]…` of each process (shortened), for the test's report."""
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            argv = " ".join(os.path.basename(a) if i == 0 else a
                            for i, a in enumerate(proc.cmdline()[:3]))
            found.append(f"{proc.name()}: {argv[:60]}")
    return sorted(found)


# ----- (a) settle with the verdict; (g) the card's prompt reached the model ------------------
async def test_run_settles_ok_with_the_verdict_and_the_shell_tool_wrote_the_file(
    world: CodexWorld,
) -> None:
    final = f"I wrote hi.txt.\n{verdict_line('wrote hi.txt')}"
    world.server.script(
        Reply([Text("I'll write it.", tokens=3),
               ToolCall("exec_command", {"cmd": "printf hi > hi.txt"}, tokens=6)]),
        Text(final, tokens=15, tokens_per_second=300),
    )
    async with agent_host(world.project) as sup:
        began = time.monotonic()
        node = await spawn_codex(sup, "writer", "Create hi.txt containing hi, then a verdict.")
        done = await settle(sup, node.id)
        print(f"codex: spawn → settled in {time.monotonic() - began:.2f} s")
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None
        assert json.loads(done.verdict) == {"ok": True, "reason": "wrote hi.txt"}
        assert (world.project / "hi.txt").read_text() == "hi"  # the sandbox let it write
        rollout = rollout_of(sup, node.id)
        assert rollout.parent.parent.parent.parent == world.codex.codex_home / "sessions"
        assert world.codex.rollouts() == [rollout]
    requests = world.server.requests()
    assert [r.state for r in requests] == ["completed", "completed"]
    assert world.server.unscripted() == []
    for request in requests:  # (g) the card's body is Codex's developer instructions
        assert request.system_prompt is not None and world.marker in request.system_prompt
        assert "You are a coding agent running in the Codex CLI" in request.system_prompt
    assert user_texts(requests[0])[-1] == "Create hi.txt containing hi, then a verdict."


# ----- (b) inspect: the server's tokens and its stream rate -----------------------------------
async def test_inspect_gives_the_servers_tokens_and_its_stream_rate(world: CodexWorld) -> None:
    tokens, rate = 400, 100.0  # 4 s of stream: Codex's fixed costs (~40-70 ms) are 1-2 % of it
    body = "".join(f"w{i} " for i in range(tokens))
    world.server.script(
        Text(f"{body}\n{verdict_line('streamed')}", tokens=tokens, tokens_per_second=rate)
    )
    async with agent_host(world.project) as sup:
        since = sup.model.clock()
        node = await spawn_codex(sup, "talker", "Talk for a while, then give a verdict.")
        live = await live_rate(sup, node.id, tokens, since)
        print(f"codex: live {live:.1f} tok/s (server {rate:g})")
        view = sup.model.nodes[node.id]
        done = await settle(sup, node.id)
        assert view.streaming is None  # the rollout's exact figures took over
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        (request,) = await asyncio.to_thread(world.server.wait_for_finished, 1, timeout=5)
        assert request.output_tokens == tokens
        server_ms = (request.finished_at or 0) - request.received_at
        link = Path(sup.names.node(node.id).session_file or "")
        progress = read_session(link)
        code, out, err = await run_cli("inspect", "--json", str(link), cwd=world.project)
        assert code == 0, err
        report = json.loads(out)
        figures = (f"codex: inspect {report['tok_s']:.2f} tok/s over "
                   f"{report['generation_ms']:.0f} ms (server {rate:g} tok/s: {tokens} tokens, "
                   f"request open {server_ms * 1000:.0f} ms)")
        print(figures)
        for seen in (report["tokens"]["output"], progress.tokens.output):
            assert seen == tokens, figures
        assert report["format"] == "codex" and report["turns"] == progress.turns == 1
        assert (report["verdict"]["ok"], report["verdict"]["reason"]) == (True, "streamed")
        # The file's figures, not a clock's (as in pi's test): Codex's span, from the
        # input item before the call to its token_usage record, holds the whole stream the
        # server sent (a ms of rounding aside); how much more is Codex's own time, which a
        # loaded machine stretches, so no bound above it is a fact.
        assert report["tok_s"] == pytest.approx(tokens / (report["generation_ms"] / 1000))
        assert report["generation_ms"] >= server_ms * 1000 - 2, figures
        assert report["tok_s"] == pytest.approx(progress.tok_s)
        # the host's row: the file's figures
        row = sup.queries.status(ROOT_ID, "talker")["nodes"][0]
        assert row["tokens_out"] == tokens and row["tok_s"] == round(report["tok_s"], 1), row


# ----- (c) abort mid-turn, then the next prompt ------------------------------------------------
async def test_abort_mid_turn_is_interrupted_and_the_agent_goes_on(
    world: CodexWorld,
) -> None:
    world.server.script(
        Hang(before=Text("Thinking about it for a long while", tokens=6)),
        Text(f"Still here.\n{verdict_line('answered after the abort')}"),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "slow", "Think for a long while.")
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        await until(lambda: sup.names.node(node.id).status is NodeStatus.RUNNING, 10, "running")
        began = time.monotonic()
        outcome, receipt = await sup.control.abort(ROOT_ID, "slow")
        took = time.monotonic() - began
        print(f"codex: abort → {outcome} in {took * 1000:.0f} ms: {receipt}")
        assert outcome == "interrupted", receipt
        await asyncio.to_thread(
            world.server.wait_for, lambda rs: rs[0].state == "disconnected", 5, "stream closed"
        )
        # Aborted is not done: the node keeps its thread, live and idle.
        await until(
            lambda: sup.progress_watch.progress(node.id).last_stop_reason == "aborted",
            10,
            "the aborted turn in the rollout",
        )
        await until(
            lambda: sup.queries.status(ROOT_ID, "slow")["nodes"][0]["idle"] is True,
            5,
            "the row to say idle",
        )
        assert sup.names.node(node.id).status is NodeStatus.RUNNING
        assert EventType.NODE_SETTLED not in events_of(sup, node.id)
        # It takes the next prompt: an idle steer starts a turn, which settles.
        outcome, receipt = await sup.control.steer(ROOT_ID, "slow", "Are you still there?")
        assert outcome == "accepted", receipt
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "answered after the abort" in done.verdict
        rs = world.server.requests()
        assert len(rs) == 2 and user_texts(rs[1])[-1] == "Are you still there?"
        # Codex told the model about the interrupt; the partial text was dropped.
        assert any(t.startswith("<turn_aborted>") for t in user_texts(rs[1]))
        assert "Thinking about" not in json.dumps(rs[1].body["input"])


# ----- (d) steer mid-turn ----------------------------------------------------------------------
async def test_steer_mid_turn_is_queued_and_reaches_the_next_model_request(
    world: CodexWorld,
) -> None:
    steer = "STEER-MID: also mention bananas"
    release = threading.Event()
    world.server.script(
        Hang(
            before=Text("Working on it", tokens=3),
            release=release,
            then=ToolCall("exec_command", {"cmd": "true"}, tokens=4),
        ),
        Text(f"Bananas.\n{verdict_line('mentioned bananas')}"),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "steered", "Work on it.")
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        outcome, receipt = await sup.control.steer(ROOT_ID, "steered", steer)
        assert outcome == "queued", receipt
        assert len(world.server.requests()) == 1  # nothing reached the model yet
        release.set()
        rs = await wait_requests(world, 2)
        assert steer in user_texts(rs[1]), "the steer did not reach the next request"
        assert steer not in json.dumps(rs[0].body)
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "mentioned bananas" in done.verdict
        assert world.server.unscripted() == []


# ----- (e) stop: nothing left, Codex's helpers and a backgrounded command included ---------------
async def test_stop_leaves_no_process_not_even_a_backgrounded_command(world: CodexWorld) -> None:
    # exec_command yields after 0.5 s with "Process running with session ID N"; the
    # `sleep 30` runs on in the background while the turn ends.
    world.server.script(
        ToolCall("exec_command", {"cmd": "sleep 30", "yield_time_ms": 500}, tokens=6),
        Hang(before=Text("It runs in the background", tokens=5)),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "sleeper", "Start a long sleep.")
        # The second model call hangs: the turn runs, its backgrounded command too.
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        await until(lambda: sup.names.node(node.id).status is NodeStatus.RUNNING, 10, "running")
        # The rollout says the backgrounded command still runs; /proc agrees.
        output = json.dumps(world.server.requests()[1].body["input"])
        assert "Process running with session ID" in output
        in_flight = sup.progress_watch.progress(node.id).in_flight
        assert [t.name for t in in_flight] == ["exec_command"], in_flight
        await until(
            lambda: "sleep" in names_of(by_env("LEGION_NODE_ID", node.id)),
            10,
            "the backgrounded `sleep 30` to run",
        )
        before = by_env("LEGION_NODE_ID", node.id)
        print(f"codex: processes of the node before the stop: {commands_of(before)}")
        pid = sup.names.node(node.id).pid
        assert pid is not None and pid in before
        began = time.monotonic()
        receipt = await sup.stops.stop(ROOT_ID, "sleeper")
        print(f"codex: stop in {(time.monotonic() - began) * 1000:.0f} ms")
        assert receipt == "Stopped sleeper.", receipt
        assert by_env("LEGION_NODE_ID", node.id) == []
        for gone in before:
            assert not psutil.pid_exists(gone) or psutil.Process(gone).status() == "zombie"
        assert sup.names.node(node.id).status is NodeStatus.RETIRED


# ----- (f) resume after a stop ---------------------------------------------------------------
async def test_resume_after_a_stop_appends_to_the_same_rollout(world: CodexWorld) -> None:
    task = "TASK-7c2e: write one.txt, then wait for more."
    world.server.script(
        ToolCall("exec_command", {"cmd": "printf one > one.txt"}, tokens=6),
        Hang(before=Text("Waiting", tokens=2)),
        Text(f"Done.\n{verdict_line('resumed and done')}"),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "resumed", task)
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        rollout = rollout_of(sup, node.id)
        before = rollout.read_bytes()
        assert user_messages(rollout, "TASK-7c2e") == 1
        assert await sup.stops.stop(ROOT_ID, "resumed") == "Stopped resumed."
        receipt = await sup.control.resume(ROOT_ID, "resumed")
        assert receipt.startswith("Resumed resumed on its session file"), receipt
        rs = await wait_requests(world, 3, START_LIMIT)
        assert user_texts(rs[2])[-1] == RESUME_PROMPT
        # the card's prompt: kept on resume, not doubled
        assert [(r.system_prompt or "").count(world.marker) for r in rs] == [1, 1, 1]
        assert json.dumps(rs[2].body["input"]).count("TASK-7c2e") == 1  # the old history
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "resumed and done" in done.verdict
        assert rollout_of(sup, node.id) == rollout
        assert world.codex.rollouts() == [rollout]  # the same file, no second one
        after = rollout.read_bytes()
        assert after.startswith(before) and len(after) > len(before)
        assert user_messages(rollout, "TASK-7c2e") == 1, "the task was sent again"
        assert user_messages(rollout, RESUME_PROMPT) == 1
        assert sum(e["type"] == "session_meta" for e in entries(rollout)) == 1
        assert (world.project / "one.txt").read_text() == "one"


async def test_an_auto_card_run_as_codex_resumes_with_its_own_settings_not_the_defaults(
    world: CodexWorld,
) -> None:
    """Issue 31 item 2: `[agent] default = "pi"` with a provider; a Codex agent of an
    auto card (`--kind codex`) resumed after a stop runs Codex as it first ran — pi's
    provider appended to it was `Model provider 'pi-only' not found`, and the node lost."""
    write_card(world.project, kind="auto", command=None, tools=CODEX_TOOLS, marker=world.marker)
    settings = world.project / ".legion" / "settings.toml"
    settings.write_text(
        '[agent]\ndefault = "pi"\nprovider = "pi-only"\nmodel = "pi-model"\n'
        '[agent.codex]\nenv = { LEGION_TEST_OWN = "codex-7f1" }\n'
    )
    world.server.script(
        Hang(before=Text("Waiting", tokens=2)),
        Text(f"Done.\n{verdict_line('resumed as codex')}"),
    )
    async with agent_host(world.project) as sup:
        request = ChildRequest("worker", "TASK-31b: wait.", name="own", kind="codex")
        (node,) = await sup.launcher.spawn(ROOT_ID, [request])
        assert node.kind == "codex" and node.status is not NodeStatus.FAILED, node.error
        await asyncio.to_thread(world.server.wait_for_hang, timeout=START_LIMIT)
        # [agent.codex] env reached Codex (the npm launcher and its native binary)
        assert sup.names.node(node.id).pid in by_env("LEGION_TEST_OWN", "codex-7f1")
        assert await sup.stops.stop(ROOT_ID, "own") == "Stopped own."
        # The settings change meanwhile: a resume runs what the node ran.
        settings.write_text(
            settings.read_text() + '[agent.pi]\nmodel = "pi-model-2"\n'
        )
        receipt = await sup.control.resume(ROOT_ID, "own")
        assert receipt.startswith("Resumed own on its session file"), receipt
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, (done.status, done.error)
        assert done.verdict is not None and "resumed as codex" in done.verdict
        events = sup.model.nodes[node.id].events
        launches = [e for e in events if e.type is EventType.NODE_LAUNCHED]
        assert [e.data["command"] for e in launches] == [[], []]  # Codex's own, twice


# ----- (h) a failed turn ----------------------------------------------------------------------
async def test_a_turn_the_api_fails_is_a_failed_node_with_the_apis_message(
    world: CodexWorld,
) -> None:
    # Codex 0.169.0 does not retry a 400 (one request); a 500 it retries 5 × 5 times
    # over ~25 s and then reports its own words, not the API's.
    world.server.script(Status(400, "scripted: this request is refused"))
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "refused", "Do something.")
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.FAILED, done.status
        assert done.error is not None
        assert "turn failed: scripted: this request is refused" in done.error, done.error
    assert [r.state for r in world.server.requests()] == ["error-reply"]


# ----- a launch Codex refuses ------------------------------------------------------------------
async def test_a_launch_codex_refuses_fails_with_its_own_words_and_leaves_nothing(
    world: CodexWorld,
) -> None:
    # An unknown provider: Codex refuses the thread (no model request is ever made).
    write_card(world.project, kind="codex", command=["codex", "-c", "model_provider=nowhere"])
    async with agent_host(world.project) as sup:
        (node,) = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("worker", "Do it.", name="refused")]
        )
        failed = sup.names.node(node.id)
        print(f"codex: refused launch: {failed.error}")
        assert failed.status is NodeStatus.FAILED, failed.status
        assert failed.error is not None and failed.error.startswith("launch failed: start: ")
        assert "nowhere" in failed.error, failed.error
        assert by_env("LEGION_NODE_ID", node.id) == []
    assert world.server.requests() == []


# ----- mail: a letter to a working Codex reaches it and DELIVERED ----------------------------
async def test_a_letter_to_a_working_codex_is_delivered_and_answered(world: CodexWorld) -> None:
    """Mail goes to Codex as a turn's input; the postman sees the envelope in the rollout
    (a user message) and moves the letter to DELIVERED."""
    # A letter bounces from an ended node: it is sent while the worker's tool runs. The
    # agent takes it inside the turn or as the next one: both answers say they read it.
    read = Text(f"Got the letter.\n{verdict_line('read the letter')}", tokens=5)
    world.server.script(ToolCall("exec_command", {"cmd": "sleep 2"}, tokens=4), read, read)
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "reader", "Wait two seconds, then read your mail.")
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
        assert any("fixture ready" in text for text in user_texts(world.server.requests()[-1]))


# ----- attach's two ends (issue 31 item 1) -----------------------------------------------------
async def test_a_hand_over_ends_the_agent_and_the_take_back_has_it_idle_and_steerable(
    world: CodexWorld,
) -> None:
    world.server.script(
        Text(f"First.\n{verdict_line('first')}", tokens=4),
        Text(f"Again.\n{verdict_line('followed up')}", tokens=4),
    )
    async with agent_host(world.project) as sup:
        node = await spawn_codex(sup, "handed", "Say first.")
        await settle(sup, node.id)
        await hand_over_and_take_back(sup, node.id, world.server, ui="codex")


async def test_an_idle_agent_is_released_and_a_follow_up_starts_it_again(world: CodexWorld) -> None:
    world.server.script(
        Text(f"First.\n{verdict_line('first')}", tokens=4),
        Text(f"Again.\n{verdict_line('followed up')}", tokens=4),
        Text(f"Read.\n{verdict_line('letter read')}", tokens=4),
    )
    async with agent_host(world.project) as sup:
        sup.ctx.options.idle_release = 0.5
        node = await spawn_codex(sup, "idler", "Say first.")
        await settle(sup, node.id)
        await released_then_woken(sup, node.id, world.server)
