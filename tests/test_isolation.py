"""Isolation (issue 12 item 4): every agent the user starts from root in a git
repository gets its own worktree and branch, so two side by side never edit one
checkout; a lead's members share its worktree; `[worktrees] perAgent = false` turns it
off. Real git, real processes (exec agents writing where they run, sim agents committing
in a sandbox), real settings files."""

from __future__ import annotations

from pathlib import Path

import pytest
from process_helpers import holds_a_line
from supervisor_helpers import git, hosted, settled, spawn_one, until, use_git_identity

from legion_tui.git.worktree import create_sandbox_repo
from legion_tui.model import EventType
from legion_tui.model_records import Node
from legion_tui.settings import parse_settings
from legion_tui.sim.script import SANDBOX_FILES
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import ChildRequest

pytestmark = pytest.mark.host

WRITER = """---
name: writer
description: writes where it runs
kind: exec
role: worker
command: [sh, -c, "pwd > where.txt; sleep 60"]
---
Writes where it runs.
"""
QUICK_TEAM = [
    {"role": "worker", "name": "worker-0", "task": "Fix it.", "sim": {"quick": True}},
    {"role": "scout", "name": "scout-0", "task": "Look.", "sim": {"quick": True}},
]
PER_AGENT_OFF = "[worktrees]\nperAgent = false\n"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def _project(path: Path, *, settings: str = "", cards: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / ".gitignore").write_text(".legion/\n")
    (path / "README.md").write_text("hi\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    legion = path / ".legion"
    (legion / "agents").mkdir(parents=True)
    for name, text in (cards or {}).items():
        (legion / "agents" / f"{name}.md").write_text(text)
    if settings:
        (legion / "settings.toml").write_text(settings)
    return path


def _launched(sup: Supervisor, node_id: str) -> dict[str, object]:
    events = [e for e in sup.model.nodes[node_id].events if e.type is EventType.NODE_LAUNCHED]
    return dict(events[-1].data)


async def _two_writers(sup: Supervisor) -> list[Node]:
    pair = [ChildRequest("writer", "Write.", name=name) for name in ("a", "b")]
    return await sup.launcher.spawn(ROOT_ID, pair)


async def test_two_agents_started_from_root_work_in_their_own_checkouts(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", cards={"writer": WRITER})
    async with hosted(project) as sup:
        a, b = await _two_writers(sup)  # one batch: launched side by side
        trees = [Path(str(_launched(sup, n.id)["worktree"])) for n in (a, b)]
        branches = {str(_launched(sup, n.id)["branch"]) for n in (a, b)}
        assert trees[0] != trees[1] and len(branches) == 2
        assert all(br.startswith(("legion/a-", "legion/b-")) for br in branches)
        for tree in trees:
            await until(lambda t=tree: holds_a_line(t / "where.txt"), what=f"{tree}/where.txt")
            assert (tree / "where.txt").read_text().strip() == str(tree)
        assert not (project / "where.txt").exists()  # the user's checkout is untouched
        assert git(project, "status", "--porcelain") == ""
        assert {sup.teams.holder_of(n.id) for n in (a, b)} == {a.id, b.id}


async def test_per_agent_off_runs_them_in_the_project(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", settings=PER_AGENT_OFF, cards={"writer": WRITER})
    async with hosted(project) as sup:
        a, b = await _two_writers(sup)
        for node in (a, b):
            assert "worktree" not in _launched(sup, node.id)
            assert sup.teams.holder_of(node.id) is None
        await until(lambda: holds_a_line(project / "where.txt"), what="where.txt in the project")
    assert git(project, "branch", "--list", "legion/*") == ""


async def test_a_spawn_asking_for_no_worktree_gets_none(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", cards={"writer": WRITER})
    async with hosted(project) as sup:
        (node,) = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("writer", "Write.", worktree=False)]
        )
        assert "worktree" not in _launched(sup, node.id)


async def test_sim_agents_from_root_get_distinct_sandbox_worktrees(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    sandbox = project / ".legion" / "sandbox"
    base = await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    async with hosted(project) as sup:
        sup.sandbox = sandbox
        nodes = await sup.launcher.spawn(
            ROOT_ID,
            [
                ChildRequest("worker", "Fix it.", name="w1", sim={"quick": True}),
                ChildRequest("worker", "Fix it.", name="w2", sim={"quick": True}),
            ],
        )
        data = [_launched(sup, n.id) for n in nodes]
        assert data[0]["worktree"] != data[1]["worktree"]
        assert all(Path(str(d["worktree"])).is_relative_to(sandbox) for d in data)
        assert all(sup.names.node(n.id).backend == "process" for n in nodes)  # each its own cwd
        for node, d in zip(nodes, data, strict=True):
            await settled(sup, node.id, 30.0)
            authors = set(git(sandbox, "log", "--format=%an", f"{base}..{d['branch']}").split())
            assert authors == {node.name}  # each committed on its own branch only
    assert git(project, "branch", "--list", "legion/*") == ""  # never the user's repository


async def test_a_leads_members_share_its_worktree(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    sandbox = project / ".legion" / "sandbox"
    await create_sandbox_repo(sandbox, SANDBOX_FILES, "seed")
    async with hosted(project) as sup:
        sup.sandbox = sandbox
        lead = await spawn_one(sup, "centurion", name="lead", sim={"children": QUICK_TEAM})
        await until(lambda: len(sup.model.children(lead.id)) == 2, 30.0, "the team")
        lead_tree = _launched(sup, lead.id)["worktree"]
        for member in sup.model.children(lead.id):
            await until(
                lambda m=member: any(
                    e.type is EventType.NODE_LAUNCHED for e in sup.model.nodes[m].events
                ),
                what="the member's launch",
            )
            assert "worktree" not in _launched(sup, member)  # none of its own
            assert sup.teams.holder_of(member) == lead.id
            tree = sup.teams.worktree_of(member)
            assert tree is not None and str(tree.path) == lead_tree


def test_the_setting_is_read_and_checked() -> None:
    settings, problems = parse_settings(PER_AGENT_OFF, ".legion/settings.toml")
    assert settings.worktree_per_agent is False and not problems
    settings, problems = parse_settings("[worktrees]\nperAgent = 1\nother = true\n", "s.toml")
    assert settings.worktree_per_agent is True  # a bad value keeps the default
    assert [str(p) for p in problems] == [
        "s.toml:2: setting 'worktrees.perAgent': expected true or false, got 1",
        "s.toml:3: setting 'worktrees.other': unknown key",
    ]


async def test_a_reopened_run_still_knows_each_agents_worktree(tmp_path: Path) -> None:
    """`c`, `L`, `P`, `D` after a reopen: the settled agents were launched by the host
    before, and the end-of-work keys find their worktrees in the ledger's launch records
    (they answered "works in the project itself" before)."""
    from legion_tui.supervisor.root_ops import RootOperations

    project = _project(tmp_path / "project", cards={"writer": WRITER})
    async with hosted(project) as sup:
        a, _b = await _two_writers(sup)
        tree = Path(str(_launched(sup, a.id)["worktree"]))
    async with hosted(project) as again:  # the same session: the same run, reopened
        space = RootOperations(again).workspace(a.id)
        assert space is not None and space.owner_id == a.id and space.tree.path == tree
