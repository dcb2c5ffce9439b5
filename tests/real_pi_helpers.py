"""Legion driving the real pi CLIs (both lines) against the scripted model server.

The end-to-end tests of issue 9 share this: a tmp project (a git repository) holding
explicit `kind: pi` role cards, the process environment an in-process `Supervisor`'s
children inherit (pi's bin dir on PATH, a per-test HOME and PI_CODING_AGENT_DIR with the
`scripted` provider), a host that checks no agent process outlives it, and /proc scans
by the run markers legion puts in every child's environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_bins import PI_LINES
from model_server import ModelServer
from pi_env import MODEL, PROVIDER, PiEnv, pi_env
from process_helpers import by_env
from supervisor_helpers import GIT_ENV, hosted, settled, until

from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

__all__ = [
    "PI_COMMAND",
    "PiWorld",
    "agent_host",
    "by_env",
    "entries",
    "events_of",
    "hand_over_and_take_back",
    "link_state",
    "make_world",
    "pi_host",
    "pi_session_files",
    "released_then_woken",
    "server",
    "settle",
    "spawn_pi",
    "until",
    "use_env",
    "verdict_line",
    "world",
    "write_card",
]

PI_TOOLS = ("read", "bash", "edit", "write")
PI_COMMAND = ("pi", "--provider", PROVIDER, "--model", MODEL)
START_LIMIT = 60.0  # one pi start on 2 loaded cores: 2–5 s; six together: far more
TURN_LIMIT = 60.0

# Inherited variables that would send pi elsewhere (a proxy, a real key) or change Node.
# LEGION_AGENTS_DIR stays: the suite's "look in no folder of installed agents" (conftest).
_DROP = re.compile(
    r"(?i)^(.*_proxy|.*_api_key|node_options|npm_.*|legion_(?!agents_dir$).*|pi_.*)$"
)


def verdict_line(reason: str, ok: bool = True) -> str:
    return json.dumps({"ok": ok, "reason": reason})


def write_card(
    project: Path,
    name: str = "worker",
    *,
    tools: Sequence[str] = PI_TOOLS,
    marker: str | None = None,
    role: str = "worker",
    kind: str = "pi",
    command: Sequence[str] | None = PI_COMMAND,
    depth: int = 0,
) -> str:
    """`<project>/.legion/agents/<name>.md`, a `kind` card (pi's by default; `command`
    None: the card names none, the kind's program runs); returns its body marker."""
    marker = marker or f"LEGION-CARD-{name.upper()}-{secrets.token_hex(4)}"
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    argv = "" if command is None else f"command: [{', '.join(command)}]\n"
    if depth:  # a lead: it may spawn members (`maxSubagentDepth`)
        argv += f"maxSubagentDepth: {depth}\n"
    (agents / f"{name}.md").write_text(
        "---\n"
        f"name: {name}\n"
        f"description: A real {kind} {role} for the end-to-end tests.\n"
        f"kind: {kind}\n"
        f"role: {role}\n"
        f"{argv}"
        f"tools: [{', '.join(tools)}]\n"
        "---\n"
        f"{marker}: you are a legion test {role}. Do what the task says, then end your\n"
        'final message with a verdict line: {"ok": true, "reason": "..."}.\n',
        encoding="utf-8",
    )
    return marker


@dataclass
class PiWorld:
    """One test's pi line, model server, pi environment and project."""

    line: str
    server: ModelServer
    pi: PiEnv
    project: Path
    marker: str  # the worker card's body marker

    @property
    def env(self) -> dict[str, str]:
        """The environment of a `legion` subprocess (a user's shell, with pi on PATH)."""
        return {**self.pi.env, **GIT_ENV}


def use_env(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`env` (and the test git identity) as this process's environment, inherited keys,
    proxies and legion markers dropped: an in-process Supervisor's children inherit it."""
    for key in list(os.environ):
        if _DROP.match(key):
            monkeypatch.delenv(key, raising=False)
    for key, value in {**env, **GIT_ENV}.items():
        monkeypatch.setenv(key, value)


def make_world(
    line: str, server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> PiWorld:
    """Lay out pi's env and a git project with the worker card; apply the env to this
    process (an in-process Supervisor's children inherit os.environ)."""
    pi = pi_env(line, server.base_url, tmp_path / "pi")
    use_env(pi.env, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(
        ["git", "init", "-q", "-b", "main"], cwd=project, check=True, env={**pi.env, **GIT_ENV}
    )
    marker = write_card(project)
    return PiWorld(line, server, pi, project, marker)


def pi_host(world: PiWorld) -> contextlib.AbstractAsyncContextManager[Supervisor]:
    """A started Supervisor on the pi world's project (see `agent_host`)."""
    return agent_host(world.project)


@contextlib.asynccontextmanager
async def agent_host(project: Path) -> AsyncIterator[Supervisor]:
    """A started Supervisor on `project`; on the way out, no agent process may be left."""
    async with hosted(project, stop_grace=1.0) as sup:
        run_id = sup.run.run_id
        yield sup
    # The pause (close) swept every child; a straggler is a leak.
    deadline = time.monotonic() + 10.0
    left = by_env("LEGION_RUN_ID", run_id)
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        left = by_env("LEGION_RUN_ID", run_id)
    assert left == [], f"agent processes left behind by run {run_id}: {left}"


async def spawn_pi(sup: Supervisor, name: str, task: str, role: str = "worker") -> Node:
    (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest(role, task, name=name)])
    assert node.kind == "pi" and node.backend == "pi-rpc", node
    assert node.status is not NodeStatus.FAILED, node.error
    return node


async def live_rate(sup: Supervisor, node_id: str, tokens: int, since: float) -> float:
    """While the agent streams `tokens`, its deltas give the row a live segment: wait
    until it passes half of them, check what no loaded machine can stretch, and return its
    rate to print. How close that rate is to the server's pacing is a measure of arrival
    times (a stall bunches the first deltas: a soak run read 126 tok/s of 100), so it is
    printed, not bounded."""
    view = sup.model.nodes[node_id]
    half = tokens // 2
    await until(
        lambda: view.streaming is not None and view.streaming.tokens >= half,
        START_LIMIT,
        f"the streaming segment to pass {half} tokens",
    )
    seg, now = view.streaming, sup.model.clock()
    assert seg is not None
    # Counted in deltas (a token each here), not characters; timed in this clock's
    # seconds since the spawn, not milliseconds.
    assert half <= seg.tokens <= tokens, seg
    assert since <= seg.start < seg.end <= now, (since, seg, now)
    return seg.tokens / (seg.end - seg.start)


async def settle(sup: Supervisor, node_id: str, limit: float = TURN_LIMIT) -> Node:
    """`settled` (the node ended and its ending's event is in the model) within a real
    agent's turn bound; then the node (status, verdict)."""
    return await settled(sup, node_id, limit)


async def hand_over_and_take_back(
    sup: Supervisor, node_id: str, server: ModelServer, *, ui: str | None = None
) -> None:
    """Attach's two ends on a settled real agent (issue 31 item 1): the hand-over ends
    its process and leaves the node `attached`, not retired for good; meanwhile `ui`
    (a kind: `ui_stand_ins`) stands in for that agent's own UI, a turn appended to the
    session; the take-back starts its agent on the session and sends nothing; the node
    settles again, and a follow-up is answered on the same session, its history — the
    UI's turn too — kept."""
    from ui_stand_ins import ui_turn

    from legion_tui import receipts
    from legion_tui.supervisor.root_ops import RootOperations
    from legion_tui.widgets.tree.rows import activity

    ops = RootOperations(sup)
    name = sup.names.node(node_id).name
    link = Path(sup.names.node(node_id).session_file or "")
    before = _real(link)
    await ops.hand_over(node_id)
    view = sup.model.nodes[node_id]
    assert view.node.status is NodeStatus.RETIRED and view.interrupted
    assert activity(view, time.time()).text == "attached · r takes it back"
    assert by_env("LEGION_NODE_ID", node_id) == []  # its session is the UI's alone now
    if ui is not None:
        ui_turn(ui, before, "UI-TYPED-31: use the v2 api.", "UI-ANSWER-31: v2 it is.")
    asked = len(server.requests())
    assert await ops.take_back(node_id) == receipts.adopted(name)
    done = await settle(sup, node_id)
    assert done.status is NodeStatus.SETTLED, (done.status, done.error)
    assert len(server.requests()) == asked  # nothing was sent on the way back
    handle = sup.ctx.roster.handle(node_id)
    assert sup.names.node(node_id).pid in by_env("LEGION_NODE_ID", node_id), (
        f"its agent is gone: exit {handle.exited if handle is not None else 'unknown'}"
    )
    outcome, _receipt = await sup.control.steer(ROOT_ID, name, "FOLLOW-UP-31a: and now?")
    assert outcome in ("accepted", "queued"), outcome
    await until(lambda: len(server.requests()) > asked, TURN_LIMIT, "the follow-up's request")
    done = await settle(sup, node_id)
    assert done.status is NodeStatus.SETTLED, (done.status, done.error)
    assert done.verdict is not None and "followed up" in done.verdict, done.verdict
    last = server.requests()[-1]
    assert "FOLLOW-UP-31a" in json.dumps(last.body)  # (each dialect: its own shape)
    if ui is not None:  # what the UI's turn added is the agent's history now
        history = json.dumps(last.body)
        assert "UI-TYPED-31" in history and "UI-ANSWER-31" in history, history[-600:]
    assert _real(link) == before  # the same session, grown
    assert "FOLLOW-UP-31a" in _text(before)


async def released_then_woken(sup: Supervisor, node_id: str, server: ModelServer) -> None:
    """Idle release (issue 31 item 4) on a real agent that settled with the host's
    `idle_release` lowered: its process ends, the node stays settled and says
    `released`; a follow-up starts it again on its session (the receipt says so) and is
    answered there; released again, a letter starts it the same way. The server's script
    ends with the answers `followed up` and `letter read`."""
    from legion_tui import receipts
    from legion_tui.widgets.tree.rows import activity

    view = sup.model.nodes[node_id]
    name = view.node.name
    await until(lambda: view.released, 30, f"{name}'s release")
    assert view.node.status is NodeStatus.SETTLED and view.node.pid is None
    assert by_env("LEGION_NODE_ID", node_id) == []
    assert activity(view, time.time()).text.endswith(" · released")
    link = Path(view.node.session_file or "")
    before = _real(link)
    asked = len(server.requests())
    outcome, receipt = await sup.control.steer(ROOT_ID, name, "FOLLOW-UP-31b: and now?")
    assert receipt.startswith(receipts.woken(name)), receipt
    assert outcome in ("accepted", "queued"), outcome
    assert not view.released and by_env("LEGION_NODE_ID", node_id) != []
    await until(lambda: len(server.requests()) > asked, TURN_LIMIT, "the follow-up's request")
    done = await settle(sup, node_id)
    assert done.status is NodeStatus.SETTLED, (done.status, done.error)
    assert done.verdict is not None and "followed up" in done.verdict, done.verdict
    assert "FOLLOW-UP-31b" in json.dumps(server.requests()[-1].body)
    assert _real(link) == before and "FOLLOW-UP-31b" in _text(before)
    # Released again, a letter wakes it the same way, and is read on the same session.
    await until(lambda: view.released, 30, f"{name}'s second release")
    asked = len(server.requests())
    assert sup.ctx.mail is not None
    sent = await sup.ctx.mail.send(ROOT_ID, name, "news", "LETTER-31b: the api is v2.")
    assert sent["state"] in ("pending", "accepted"), sent  # (the send ticks it: woken)
    await until(lambda: len(server.requests()) > asked, TURN_LIMIT, "the letter's request")
    done = await settle(sup, node_id)
    assert done.verdict is not None and "letter read" in done.verdict, done.verdict
    assert "LETTER-31b" in json.dumps(server.requests()[-1].body)
    assert _real(link) == before and "LETTER-31b" in _text(before)
    await until(lambda: view.mail.delivered >= 1, 30, "the letter delivered")


def _real(link: Path) -> Path:
    return Path(os.path.realpath(link))


def _text(path: Path) -> str:
    return path.read_text()


def events_of(sup: Supervisor, node_id: str) -> list[EventType]:
    return [e.type for e in sup.model.nodes[node_id].events]


def pi_session_files(sup: Supervisor, node_id: str) -> list[Path]:
    """The files pi itself wrote for a node (`<run>/sessions/<nodeId>/*.jsonl`)."""
    return sorted((sup.run.sessions_dir / node_id).glob("*.jsonl"))


def link_state(path: str | None) -> str:
    """`path → target (exists: …)`: where a node's session link really points."""
    where = path or ""
    return f"{where} → {os.path.realpath(where)} (exists: {os.path.exists(where)})"


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s
        assert s.errors() == []


@pytest.fixture(params=PI_LINES)
def world(
    request: pytest.FixtureRequest,
    server: ModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> PiWorld:
    """A project with a pi card, for each pi line (the tests import this fixture)."""
    return make_world(request.param, server, tmp_path, monkeypatch)
