"""BLOCKED from Codex's own approval request (issue 12 item 5).

The real pinned `codex app-server`, started from a card that asks for approvals
(`-c approval_policy=untrusted`): a command that is not on Codex's safe list is sent to
legion as `item/commandExecution/requestApproval` before it runs. The node is BLOCKED
with the command as its question; the user's "y" (a steer) accepts and the command runs,
anything else declines and it never runs. Codex's default card (`never`) asks nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from codex_env import MODEL, codex_env
from model_server import ModelServer, Reply, Text, ToolCall
from real_pi_helpers import agent_host, settle, until, use_env, verdict_line, write_card
from supervisor_helpers import GIT_ENV

from legion_tui.model import EventType, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.real

TURN_LIMIT = 60.0


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    with ModelServer(model_ids=(MODEL,)) as s:
        yield s


def _project(tmp_path: Path, server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    codex = codex_env(server.base_url, tmp_path / "codex")
    use_env(codex.env, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True,
                   env={**codex.env, **GIT_ENV})  # fmt: skip
    write_card(project, kind="codex", command=("codex", "-c", "approval_policy=untrusted"),
               tools=("bash",))  # fmt: skip
    return project


def _questions(sup: Supervisor, node_id: str) -> list[str]:
    return [str(e.data.get("question")) for e in sup.model.nodes[node_id].events
            if e.type is EventType.NODE_BLOCKED]  # fmt: skip


async def _run_and_answer(sup: Supervisor, answer: str) -> tuple[str, NodeStatus]:
    (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "write hi.txt", name="w")])
    await until(lambda: sup.names.node(node.id).status is NodeStatus.BLOCKED
                and bool(_questions(sup, node.id)), TURN_LIMIT, "the node to block")  # fmt: skip
    question = _questions(sup, node.id)[-1]
    outcome, _ = await sup.control.steer(ROOT_ID, "w", answer)
    assert outcome == "accepted"
    done = await settle(sup, node.id)
    return question, done.status


def _script(server: ModelServer) -> None:
    server.script(
        Reply([ToolCall("exec_command", {"cmd": "printf hi > hi.txt"}, tokens=6)]),
        Text(f"Done.\n{verdict_line('asked first')}"),
    )


async def test_an_approval_request_blocks_and_y_lets_the_command_run(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, server, monkeypatch)
    _script(server)
    async with agent_host(project) as sup:
        question, status = await _run_and_answer(sup, "y")
        assert question.startswith("approve: run") and "printf hi > hi.txt" in question, question
        assert question.endswith("? y once · a always · else no (your words say why)")
        assert status is NodeStatus.SETTLED
        assert (project / "hi.txt").read_text() == "hi"


async def test_another_answer_declines_and_the_command_never_runs(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, server, monkeypatch)
    _script(server)
    async with agent_host(project) as sup:
        _question, status = await _run_and_answer(sup, "no, not now")
        assert status is NodeStatus.SETTLED
        assert not (project / "hi.txt").exists()
        # Codex's decline has no reason field: the words followed it into the turn.
        assert "The user declined that: no, not now" in json.dumps(server.requests()[-1].body)


async def test_a_always_accepts_for_the_session_and_the_same_command_is_not_asked_again(
    server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 5: approve for this tool — Codex's `acceptForSession` (its own
    session cache; no policy file is written)."""
    project = _project(tmp_path, server, monkeypatch)
    server.script(
        Reply([ToolCall("exec_command", {"cmd": "printf hi > hi.txt"}, tokens=6)]),
        Reply([ToolCall("exec_command", {"cmd": "printf hi > hi.txt"}, tokens=6)]),
        Text(f"Done.\n{verdict_line('asked once')}"),
    )
    async with agent_host(project) as sup:
        (node,) = await sup.launcher.spawn(ROOT_ID, [ChildRequest("worker", "twice", name="w")])
        await until(lambda: sup.names.node(node.id).status is NodeStatus.BLOCKED,
                    TURN_LIMIT, "the node to block")  # fmt: skip
        assert (await sup.control.steer(ROOT_ID, "w", "a"))[0] == "accepted"
        done = await settle(sup, node.id)
        assert done.status is NodeStatus.SETTLED, done.error
        assert len(_questions(sup, node.id)) == 1  # the second run was not asked
        assert (project / "hi.txt").read_text() == "hi"
        assert server.pending() == 0


def test_permissions_choose_the_approval_policy_and_the_cards_own_wins() -> None:
    from legion_tui.supervisor.backends.codex.argv import approval_policy

    assert approval_policy(["codex"], None) == ("never", ["codex"])
    assert approval_policy(["codex"], "ask") == ("untrusted", ["codex"])
    assert approval_policy(["codex"], "allowed-tools")[0] == "never"
    assert approval_policy(["codex"], "never-ask")[0] == "never"
    card = ["codex", "-c", "approval_policy=on-request"]
    assert approval_policy(card, "ask") == ("on-request", ["codex"])
