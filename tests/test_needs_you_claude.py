"""BLOCKED from Claude Code's own permission request (issue 12 item 5).

The real pinned `claude`, run by legion with `--permission-prompt-tool=stdio`, asks on its
stdout (`control_request` `can_use_tool`) before a tool its rules do not allow; the node
is BLOCKED with the question, and the user's answer (a steer) goes back as the
permission's `control_response` — "y" lets the tool run, anything else denies it with
that text as the reason, which reaches the model as the tool's result.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from claude_env import MODEL, claude_env, claude_world, drop_claude_settings
from model_server import ModelServer, Reply, Text, ToolCall
from real_pi_helpers import TURN_LIMIT, agent_host, settle, until, use_env, verdict_line, write_card
from supervisor_helpers import GIT_ENV

from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real


def _project(tmp_path: Path, server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    world = claude_world(tmp_path)
    env = claude_env(world, server.origin)
    drop_claude_settings(monkeypatch)
    use_env(env, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                   env={**env, **GIT_ENV})  # fmt: skip
    write_card(project, tools=("bash",), kind="claude", command=("claude", "--model", MODEL))
    return project


def _questions(sup: Supervisor, node_id: str) -> list[str]:
    return [str(e.data.get("question")) for e in sup.model.nodes[node_id].events
            if e.type is EventType.NODE_BLOCKED]  # fmt: skip


async def _blocked(sup: Supervisor, node_id: str) -> str:
    await until(lambda: sup.names.node(node_id).status is NodeStatus.BLOCKED
                and bool(_questions(sup, node_id)), TURN_LIMIT, "the node to block")  # fmt: skip
    return _questions(sup, node_id)[-1]


def _tool_results(server: ModelServer) -> str:
    """Every tool result the model was sent, as one text."""
    found = []
    for request in server.requests():
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        for message in messages or []:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(json.dumps(block.get("content")))
    return "\n".join(found)


async def _ask_and_answer(sup: Supervisor, answer: str) -> tuple[str, Node]:
    """Spawn the worker, wait for its permission question, answer it, let it settle."""
    (node,) = await sup.launcher.spawn(
        ROOT_ID, [ChildRequest("worker", "Write the file", name="w")]
    )
    question = await _blocked(sup, node.id)
    outcome, _receipt = await sup.control.steer(ROOT_ID, "w", answer)
    assert outcome == "accepted"
    done = await settle(sup, node.id)
    assert done.status is NodeStatus.SETTLED, done.error
    return question, done


async def test_a_permission_request_blocks_and_y_lets_the_tool_run(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, server, monkeypatch)
    target = project / "asked.txt"
    server.script(
        # Write is not among the card's tools: Claude asks before it runs.
        Reply([ToolCall("Write", {"file_path": str(target), "content": "yes"}, id="toolu_w1")]),
        Text(f"Wrote it.\n{verdict_line('wrote asked.txt')}"),
    )
    async with agent_host(project) as sup:
        question, node = await _ask_and_answer(sup, "y")
        assert question.startswith("allow Write") and question.endswith(
            "? y once · a always · else no (your words say why)"
        ), question
        assert target.read_text() == "yes"
        kinds = [e.type for e in sup.model.nodes[node.id].events]
        assert kinds.count(EventType.NODE_BLOCKED) == 1


async def test_any_other_answer_denies_the_tool_with_the_users_words(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, server, monkeypatch)
    target = project / "denied.txt"
    server.script(
        Reply([ToolCall("Write", {"file_path": str(target), "content": "no"}, id="toolu_w2")]),
        Text(f"Not written.\n{verdict_line('the user said no', ok=False)}"),
    )
    async with agent_host(project) as sup:
        await _ask_and_answer(sup, "not that file, use notes.md")
        assert not target.exists()
        assert "not that file, use notes.md" in _tool_results(server)


async def test_a_always_allows_the_tool_for_the_session_and_it_is_not_asked_again(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 5: approve for this tool — a `session` rule in the permission's
    answer; no rule is written into the project's or the user's .claude settings."""
    project = _project(tmp_path, server, monkeypatch)
    first, second = project / "one.txt", project / "two.txt"
    server.script(
        Reply([ToolCall("Write", {"file_path": str(first), "content": "1"}, id="toolu_a1")]),
        Reply([ToolCall("Write", {"file_path": str(second), "content": "2"}, id="toolu_a2")]),
        Text(f"Wrote both.\n{verdict_line('wrote both')}"),
    )
    async with agent_host(project) as sup:
        question, node = await _ask_and_answer(sup, "a")
        assert question.startswith("allow Write"), question
        assert first.read_text() == "1" and second.read_text() == "2"
        assert len(_questions(sup, node.id)) == 1  # the second Write was not asked
        assert not (project / ".claude").exists()  # the rule lived in the session only


async def test_a_card_with_permissions_allowed_tools_is_never_asked_and_the_tool_is_denied(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, server, monkeypatch)
    card = project / ".legion" / "agents" / "worker.md"
    policy = "kind: claude\npermissions: allowed-tools\n"
    card.write_text(card.read_text().replace("kind: claude\n", policy))
    target = project / "unasked.txt"
    server.script(
        Reply([ToolCall("Write", {"file_path": str(target), "content": "x"}, id="toolu_u1")]),
        Text(f"Could not.\n{verdict_line('Write was denied', ok=False)}"),
    )
    async with agent_host(project) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "Write", name="w")])
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, done.error
        assert _questions(sup, node.id) == [] and not target.exists()
