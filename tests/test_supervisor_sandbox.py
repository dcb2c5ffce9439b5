"""Worktrees for simulated teams come only from a sandbox the host owns (the demo's):
never from the user's repository, and never where a spawn request points."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import git, hosted, settled, spawn_one, until

from legion_tui.git.worktree import create_sandbox_repo
from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Event
from legion_tui.phases import DEFAULT_MACHINE
from legion_tui.sim.script import SANDBOX_FILES

pytestmark = pytest.mark.host

QUICK_TEAM = [
    {"role": "worker", "name": "worker-0", "task": "Fix it.", "sim": {"quick": True}},
    {"role": "scout", "name": "scout-0", "task": "Look.", "sim": {"quick": True}},
]


def _user_repo(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    (path / ".gitignore").write_text(".legion/\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "mine")
    return _state(path)


def _state(path: Path) -> str:
    return "\n".join(
        git(path, *args)
        for args in (
            ("for-each-ref",),
            ("worktree", "list", "--porcelain"),
            ("status", "--porcelain"),
        )
    )


def _launched(sup: object, node_id: str) -> dict[str, object]:
    events = [
        e
        for e in sup.model.nodes[node_id].events  # type: ignore[attr-defined]
        if e.type is EventType.NODE_LAUNCHED
    ]
    return dict(events[-1].data)


def _settled_events(sup: object, node_id: str) -> list[Event]:
    return [
        e
        for e in sup.model.nodes[node_id].events  # type: ignore[attr-defined]
        if e.type is EventType.NODE_SETTLED
    ]


async def test_a_sim_team_in_the_users_repository_gets_no_worktree(tmp_path: Path) -> None:
    before = _user_repo(tmp_path)
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": QUICK_TEAM})
        await settled(sup, lead.id, 30.0)
        assert "worktree" not in _launched(sup, lead.id)
        assert sup.names.node(lead.id).backend == "inprocess"
    assert _state(tmp_path) == before


async def test_a_sandbox_gives_the_team_a_branch_its_members_commit_to(tmp_path: Path) -> None:
    before = _user_repo(tmp_path)
    sandbox = tmp_path / ".legion" / "sandbox"
    base = await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    async with hosted(tmp_path) as sup:
        sup.sandbox = sandbox
        lead = await spawn_one(
            sup,
            "centurion",
            name="lead",
            sim={"children": QUICK_TEAM},
            phases=DEFAULT_MACHINE.to_dict(),
        )
        await until(lambda: bool(sup.model.children(lead.id)), what="the team")
        data = _launched(sup, lead.id)
        branch = str(data["branch"])
        assert branch.startswith("legion/lead-") and data["base_sha"] == base
        assert Path(str(data["worktree"])).is_relative_to(sandbox)
        assert sup.names.node(lead.id).backend == "process"  # its own cwd: the worktree
        node = await settled(sup, lead.id, 60.0)
        assert node.status is NodeStatus.SETTLED and node.phase == "done"
        # The row turns settled a moment before its node_settled event is appended.
        await until(lambda: bool(_settled_events(sup, lead.id)), what="the node_settled event")
        (event,) = _settled_events(sup, lead.id)
        delivery = event.data["delivery"]
        assert delivery["branch"] == branch and delivery["commits"] >= 1
        assert git(sandbox, "rev-parse", branch) == delivery["head_sha"]
        authors = set(git(sandbox, "log", "--format=%an", f"{base}..{branch}").split())
        assert authors == {"worker-0"}  # the scout looks, the worker commits
        # Every event in the ledger is in the live model too (the Events tab needs no
        # reopen): the supervisor's own and those the ledger wrote for mail and phases.
        await sup.ledger.flush()
        for node_id, view in sup.model.nodes.items():
            stored = [(e.id, e.type) for e in await sup.ledger.get_events(node_id)]
            assert [(e.id, e.type) for e in view.events] == stored, view.node.path
        lead_events = {e.type for e in sup.model.nodes[lead.id].events}
        assert {EventType.MAIL_SENT, EventType.PHASE_CHANGE} <= lead_events
        assert EventType.VERIFICATION_RESULT in lead_events
    assert _state(tmp_path) == before


async def test_a_spawn_request_cannot_point_a_sim_at_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    _user_repo(target)
    before = _state(target)
    files = {p.name for p in target.iterdir()}
    async with hosted(tmp_path) as sup:
        worker = await spawn_one(sup, task="Fix it.", sim={"quick": True, "worktree": str(target)})
        await settled(sup, worker.id, 30.0)
    assert _state(target) == before
    assert {p.name for p in target.iterdir()} == files
