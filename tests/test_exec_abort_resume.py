"""An exec agent is offered only what works, and told what happened (issue 14 item 21):
`abort` on one said "context kept" while SIGINT ended the command (`failed – exited with
status -2`); an interrupted one was offered `r resumes`. An exec command has no turn and
no session to continue: abort says it exited, and resume starts it again on its task."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import hosted, settled, spawn_one, until

from legion_tui.model import NodeStatus
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host


def _card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "looper.md").write_text(
        "---\nname: looper\ndescription: Runs until stopped.\nkind: exec\nrole: worker\n"
        'command: ["sh", "-c", "echo started {name}; exec sleep 600"]\n---\nLoop.\n',
        encoding="utf-8",
    )


async def test_abort_of_an_exec_command_says_it_exited_and_resume_restarts_it(
    tmp_path: Path,
) -> None:
    _card(tmp_path)
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, "looper", name="l")
        view = sup.model.nodes[node.id]
        await until(lambda: view.terminal_line == "started l", 30, "the command")
        outcome, receipt = await sup.control.abort(ROOT_ID, "l")
        assert outcome == "interrupted"
        assert receipt == (
            "Interrupted l: the command exited (status -2) — an exec command keeps no "
            "context; resume l starts it again on its task."
        )
        assert "context kept" not in receipt
        done = await settled(sup, node.id)
        assert done.status is NodeStatus.FAILED and done.error == "exited with status -2"
        said = await sup.control.resume(ROOT_ID, "l")
        assert said.startswith("Restarted l"), said
        await until(lambda: sup.names.node(node.id).live and view.terminal_line == "started l", 30)


async def test_an_exec_command_interrupted_by_the_exit_resumes_on_its_task(
    tmp_path: Path,
) -> None:
    _card(tmp_path)
    async with hosted(tmp_path, "s") as first:
        node = await spawn_one(first, "looper", name="l")
        view = first.model.nodes[node.id]
        await until(lambda: view.terminal_line == "started l", 30, "the command")
    async with hosted(tmp_path, "s") as again:
        assert [v.node.name for v in again.model.interrupted()] == ["l"]
        said = await again.control.resume(ROOT_ID, "l")
        assert said.startswith("Restarted l"), said
        view = again.model.nodes[node.id]
        node_of = again.names.node
        await until(lambda: node_of(node.id).live and view.terminal_line == "started l", 30)
