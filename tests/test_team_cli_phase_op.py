"""`legion phase`, the phase clock and a centurion's worktree, wired into a real Supervisor
(real ledger, real sim agents, real processes, a real git repository)."""

from __future__ import annotations

from pathlib import Path

import pytest
from process_helpers import holds_a_line
from supervisor_helpers import (
    STUCK,
    cli_env,
    git,
    hosted,
    run_cli,
    settled,
    spawn_one,
    until,
    use_git_identity,
)

from legion_tui import receipts
from legion_tui.model import EventType, MailKind, MailState, NodeStatus
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.client import LegionClient
from legion_tui.wire.names import ROOT_ID, OpError

pytestmark = pytest.mark.host

PIPELINE = {
    "phases": [
        {"id": "planning", "require": ["contract_file"], "next": ["implementing"]},
        {"id": "implementing", "next": ["verifying"]},
        {"id": "verifying", "next": [{"to": "done", "require": ["verification_passed"]}]},
    ]
}


async def stuck_lead(sup: Supervisor, machine: dict[str, object] = PIPELINE) -> str:
    """A centurion stalled in its first tool call: the test moves its phases for it."""
    lead = await spawn_one(sup, "centurion", name="lead", phases=machine, sim=dict(STUCK))
    await until(lambda: sup.names.node(lead.id).live, what="lead live")
    return lead.id


def read(path: str) -> str:
    return Path(path).read_text()


def exists(path: Path) -> bool:
    return path.exists()


def write_contract(sup: Supervisor, commands: str) -> Path:
    path = sup.run.dir / "contracts" / "lead.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Contract\n\n```legion-verify\n{commands}\n```\n")
    return path


async def test_a_team_moves_itself_and_refusals_list_the_legal_phases(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        lead = await stuck_lead(sup)
        with pytest.raises(OpError) as err:
            await sup.teams.phase_op.phase(lead, "implementing")  # no contract yet
        assert err.value.code == "PHASE_REFUSED"
        assert "contract_file" in err.value.message
        assert "Legal next phases from planning" in err.value.message
        assert sup.names.node(lead).phase == "planning"

        write_contract(sup, "true")
        since = sup.names.node(lead).phase_since
        reply = await sup.teams.phase_op.phase(
            lead, "implementing", note="contract frozen", evidence="lead.md"
        )
        assert reply == {
            "phase": "implementing",
            "from": "planning",
            "receipt": receipts.phase_moved("lead", "planning", "implementing"),
        }
        node = sup.names.node(lead)
        assert node.phase == "implementing" and (node.phase_since or 0) >= (since or 0)
        change = [e for e in sup.model.nodes[lead].events if e.type is EventType.PHASE_CHANGE][-1]
        assert change.data == {
            "from": "planning",
            "to": "implementing",
            "note": "contract frozen",
            "evidence": "lead.md",
        }
        stored = await sup.ledger.get_node(lead)
        assert stored is not None and stored.phase == "implementing"

        with pytest.raises(OpError) as err:
            await sup.teams.phase_op.phase(lead, "done")  # not a declared exit of implementing
        assert err.value.message.endswith("verifying")  # …and the legal one is named

        with pytest.raises(OpError) as err:
            await sup.teams.phase_op.phase(lead, "failed")
        assert err.value.message.endswith(receipts.PHASE_FAILED_NEEDS_REASON) or (
            receipts.PHASE_FAILED_NEEDS_REASON in err.value.message
        )
        with pytest.raises(OpError) as err:
            await sup.teams.phase_op.phase(ROOT_ID, "implementing")
        assert err.value.code == "NO_PHASES"


async def test_leaving_the_gate_runs_legion_verify_and_a_failure_blocks_done(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        lead = await stuck_lead(sup)
        write_contract(sup, "echo checking\nexit 3")
        await sup.teams.phase_op.phase(lead, "implementing")
        await sup.teams.phase_op.phase(lead, "verifying")
        with pytest.raises(OpError) as err:
            await sup.teams.phase_op.phase(lead, "done")
        assert err.value.code == "PHASE_REFUSED"
        results = [
            e for e in sup.model.nodes[lead].events if e.type is EventType.VERIFICATION_RESULT
        ]
        assert results[-1].data["outcome"] == "fail"
        assert read(results[-1].data["output_file"]).count("checking") == 2
        assert sup.names.node(lead).phase == "verifying"

        write_contract(sup, "test -d .")
        reply = await sup.teams.phase_op.phase(lead, "done")
        assert reply["phase"] == "done"
        assert reply["verification"] == "verification passed (1 command)"


async def test_an_empty_contract_is_reported_by_contract_never_passed(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        lead = await stuck_lead(sup)
        write_contract(sup, "# nothing to run")
        await sup.teams.phase_op.phase(lead, "implementing")
        await sup.teams.phase_op.phase(lead, "verifying")
        reply = await sup.teams.phase_op.phase(lead, "done")
        assert reply["verification"].startswith("by contract (0 commands)")
        assert "passed (" not in reply["verification"]


async def test_legion_phase_from_the_teams_own_shell(tmp_path: Path) -> None:
    import asyncio
    import sys

    async with hosted(tmp_path) as sup:
        lead = await stuck_lead(sup)
        write_contract(sup, "true")
        env = cli_env()
        env.update(LEGION_SOCKET=str(sup.socket_path), LEGION_NODE_ID=lead)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "legion_tui.cli", "phase", "--to", "implementing",
            "--note", "from the shell", cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == "lead: planning → implementing."
        assert sup.names.node(lead).phase == "implementing"


async def test_the_phase_clock_notifies_the_parent_once_per_stint(tmp_path: Path) -> None:
    (tmp_path / ".legion").mkdir()
    (tmp_path / ".legion" / "settings.toml").write_text("[phaseTimeouts]\nplanning = 1\n")
    async with hosted(tmp_path) as sup:
        lead = await stuck_lead(sup)
        await until(lambda: sup.clock() > (sup.names.node(lead).phase_since or 0) + 0.01)
        teams = [sup.names.node(lead)]
        assert len(await sup.phase_clock.check_all(teams)) == 1
        assert await sup.phase_clock.check_all(teams) == []  # one per stint
        (notice,) = await sup.ledger.get_messages(ROOT_ID, direction="in")
        assert notice.kind is MailKind.NOTICE and notice.subject.startswith("Phase timeout:")
        assert sup.names.node(lead).status is NodeStatus.RUNNING  # it only reports

        write_contract(sup, "true")
        await sup.teams.phase_op.phase(lead, "implementing")  # the team left the stint
        await sup.mail.postman.tick(ROOT_ID)
        (notice,) = await sup.ledger.get_messages(ROOT_ID, direction="in")
        assert notice.delivered is MailState.OBSOLETE


# ----- worktrees -------------------------------------------------------------------------

EXEC_LEAD = """---
name: exec-lead
description: a team lead that is a shell command
kind: exec
role: centurion
worktree: true
command: [sh, -c, "pwd > where.txt; git add where.txt; git commit -qm where; sleep 60"]
---
Runs in its worktree.
"""


async def test_a_centurion_runs_in_its_worktree_and_delivers_branch_and_sha(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_git_identity(monkeypatch)  # the exec lead commits in its worktree
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "README.md").write_text("hi\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", "first")
    cards = project / ".legion" / "agents"
    cards.mkdir(parents=True)
    card = cards / "exec-lead.md"
    card.write_text(EXEC_LEAD)
    async with hosted(project) as sup:
        lead = await spawn_one(sup, "exec-lead", name="lead")
        await until(lambda: sup.names.node(lead.id).live, what="lead live")
        launched = [
            e for e in sup.model.nodes[lead.id].events if e.type is EventType.NODE_LAUNCHED
        ][-1]
        tree = Path(launched.data["worktree"])
        assert tree.parent.name == "worktrees" and tree.parent.parent.name == ".legion"
        assert launched.data["branch"].startswith("legion/lead-")
        await until(lambda: holds_a_line(tree / "where.txt"), what="the lead wrote where.txt")
        assert (tree / "where.txt").read_text().strip() == str(tree)
        await until(
            lambda: git(tree, "rev-parse", "HEAD") != launched.data["base_sha"],
            what="the lead committed",
        )
        result = await sup.queries.collect(ROOT_ID, "lead")
        assert result["delivery"]["branch"] == launched.data["branch"]
        assert result["delivery"]["head_sha"] == git(tree, "rev-parse", "HEAD")
        assert result["delivery"]["link"] is None  # no remote: no link, never invented
        assert result["delivery"]["commits"] == 1
        code, out, _err = await run_cli("collect", "lead", cwd=project)
        assert code == 0
        assert f"delivery: branch {launched.data['branch']} @ " in out
        await sup.stops.stop(ROOT_ID, "lead", force=True)
        await settled(sup, lead.id)
    assert exists(tree)  # nothing is deleted without an explicit command
    assert not exists(project / "where.txt")  # the project checkout was not touched


async def test_a_worker_asking_for_a_worktree_is_demoted_with_one_warning(
    tmp_path: Path,
) -> None:
    # With `perAgent` on (the default) a worker started from root may have one of its
    # own (tests/test_isolation.py); off, only a lead holds one.
    (tmp_path / ".legion").mkdir()
    (tmp_path / ".legion" / "settings.toml").write_text("[worktrees]\nperAgent = false\n")
    async with hosted(tmp_path) as sup:
        worker = await spawn_one(sup, name="w", worktree=True, sim=dict(STUCK))
        await until(lambda: sup.names.node(worker.id).live, what="w live")
        launched = [
            e for e in sup.model.nodes[worker.id].events if e.type is EventType.NODE_LAUNCHED
        ][-1]
        assert launched.data["warning"] == receipts.worktree_demoted("w", "worker")
        assert "worktree" not in launched.data
        assert sup.teams.launch_warning(worker.id) == launched.data["warning"]
        # the spawn's answer carries it too, exactly once
        async with LegionClient(sup.socket_path) as client:
            reply = await client.request(
                "spawn",
                children=[{"role": "worker", "task": "t", "name": "w2", "worktree": True}],
            )
        assert reply["warnings"] == [receipts.worktree_demoted("w2", "worker")]
