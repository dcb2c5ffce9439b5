"""An exec agent is offered only what works, and told what happened (issue 14 item 21):
`abort` on one said "context kept" while SIGINT ended the command (`failed – exited with
status -2`); an interrupted one was offered `r resumes`. An exec command has no turn and
no session to continue: abort says it exited, and resume starts it again on its task."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import hosted, settled, spawn_one, until

from legion_tui.model import MailState, NodeStatus
from legion_tui.runs.folder import inbox_file
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


async def test_an_exec_lead_hears_its_members_in_its_inbox_at_once(tmp_path: Path) -> None:
    """Issue 31 item 6: a notice to an agent without turn boundaries waited for a turn end
    it never has; its `$LEGION_INBOX` stayed empty while both members settled."""
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "exec-lead.md").write_text(
        "---\nname: exec-lead\ndescription: A lead that is a script.\nkind: exec\n"
        'role: centurion\nmaxSubagentDepth: 1\ncommand: ["sh", "-c", "echo leading; '
        'exec sleep 600"]\n---\nLead.\n',
        encoding="utf-8",
    )
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "exec-lead", name="lead")
        view = sup.model.nodes[lead.id]
        await until(lambda: view.terminal_line == "leading", 30, "the lead's command")
        members = [
            await spawn_one(sup, name=f"m{i}", caller=lead.id, sim={"quick": True})
            for i in (1, 2)
        ]
        inbox = inbox_file(sup.run.dir, lead.id)
        for member in members:
            await settled(sup, member.id)

        def told() -> str:
            return inbox.read_text() if inbox.exists() else ""

        await until(lambda: "m1" in told() and "m2" in told(), 30, "both notices in the inbox")
        assert sup.names.node(lead.id).live  # it goes on: only its command ends it

        def delivered() -> bool:
            letters = list(sup.model.nodes[lead.id].messages)
            return bool(letters) and all(m.delivered is MailState.DELIVERED for m in letters)

        await until(delivered, 30, "the notices counted delivered")
