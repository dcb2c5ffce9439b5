"""The compare view in the dashboard (issue 34 item 4), on a real git repository: Enter
on a fan-out's row opens it, each attempt's worktree read by git; ←/→ light the attempt
the keys act on, and `L` asks to land that one through the same confirm as the Diff tab,
landing after `y` only; Esc closes it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from app_helpers import FANOUT, FakeOps, canned_attempts, fanout_model, fixed_clock
from land_helpers import agent_work, make_repo
from supervisor_helpers import git, until, use_git_identity
from textual.widgets import Static

from legion_tui.dashboard.app import make_app
from legion_tui.fanout.compare import Attempt
from legion_tui.fanout.group import group_of_row
from legion_tui.git.worktree import create_worktree
from legion_tui.model import NodeStatus
from legion_tui.ops import Workspace
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.overlay.compare_view import CompareScreen

pytestmark = pytest.mark.host

ROW = f"group:n0/{FANOUT}"


async def test_enter_on_a_group_compares_its_attempts_and_L_lands_the_lit_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_git_identity(monkeypatch)
    repo = make_repo(tmp_path / "project")
    tree = await agent_work(repo)  # claude-2's: a commit, an edit, a new file
    model = fanout_model()
    ops = FakeOps(model)
    ops.workspaces = {"a2": Workspace("a2", tree)}
    app = make_app(model, ops, clock=fixed_clock, timers=False)
    before = git(repo, "rev-parse", "HEAD")
    async with app.run_test(size=(160, 50)) as pilot:
        app.railway.select(ROW)
        assert app.railway.selected_view is None  # a group is no agent: no detail of one
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, CompareScreen), what="the compare view")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await until(lambda: bool(screen.attempts), what="the worktrees read")
        by_name = {a.name: a for a in screen.attempts}
        assert by_name["claude-2"].diffstat == "+3 -2 · 2 files"  # app.py +2 -2, notes +1
        assert by_name["pi-1"].review is None and by_name["pi-1"].problem == "no worktree"
        assert screen.files == ["app.py", "notes.txt"]
        assert screen.node_id == "a1"
        await pilot.press("right")
        assert screen.node_id == "a2"
        await pilot.press("L")
        bar = screen.query_one(ConfirmBar)
        await until(lambda: bar.asking, what="the land confirm")
        assert bar.request is not None and bar.request.node_id == "a2"
        assert bar.request.prompt.startswith(f"Land {tree.branch} @ ")
        assert git(repo, "rev-parse", "HEAD") == before  # nothing landed while it asks
        await pilot.press("y")
        await until(lambda: git(repo, "rev-parse", "HEAD") != before, what="the land")
        assert git(repo, "rev-parse", "HEAD^2") == git(repo, "rev-parse", tree.branch)
        await pilot.press("escape")  # the clean-up offer after the land: keep the worktree
        await until(lambda: not bar.asking, what="the offer dismissed")
        await pilot.press("escape")
        await until(lambda: app.screen is app.main_screen, what="the compare view closed")


async def test_too_narrow_for_a_column_each_the_diffs_come_one_after_the_other() -> None:
    model = fanout_model()

    async def load() -> list[Attempt]:
        return canned_attempts()

    group = group_of_row(model, ROW)
    assert group is not None
    for width, panes in ((80, 1), (120, 3)):
        app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
        async with app.run_test(size=(width, 30)) as pilot:
            await app.push_screen(CompareScreen(model, group, load, floor=True))
            screen = app.screen
            assert isinstance(screen, CompareScreen)
            await until(lambda: bool(screen.attempts), what="the canned read")  # noqa: B023
            await pilot.pause()
            shown = list(screen.query(".compare-pane"))
            assert len(shown) == panes, (width, shown)
            text = "".join(str(p.query_one(Static).render()) for p in shown)
            assert all(name in text for name in ("pi-1", "claude-2", "codex-3")), text


async def test_D_discards_the_other_attempts_in_one_confirm_naming_each_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D keeps the lit attempt and asks once for the others, each named with what it
    would lose; a still-working attempt refuses it (its work is not done); `y` removes
    their worktrees and branches, and the kept one's stays."""
    use_git_identity(monkeypatch)
    repo = make_repo(tmp_path / "project")
    trees = {}
    for node_id, name in (("a1", "pi-1"), ("a2", "claude-2"), ("a3", "codex-3")):
        trees[node_id] = await create_worktree(repo, f"{FANOUT}.{name}", nonce="ab12cd")
        (trees[node_id].path / "new.txt").write_text(f"{name}'s\n")
    model = fanout_model()
    ops = FakeOps(model)
    ops.workspaces = {nid: Workspace(nid, tree) for nid, tree in trees.items()}
    app = make_app(model, ops, clock=fixed_clock, timers=False)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        app.railway.select(ROW)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, CompareScreen), what="the compare view")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await pilot.press("right", "D")  # keep claude-2; pi-1 still works
        await until(lambda: any("still running" in n.message for n in app.notifications),
                    what="the refusal")  # fmt: skip
        bar = screen.query_one(ConfirmBar)
        assert not bar.asking
        model.upsert(replace(model.nodes["a1"].node, status=NodeStatus.SETTLED))
        await pilot.press("D")
        await until(lambda: bar.asking, what="the discard confirm")
        prompt = bar.request.prompt if bar.request is not None else ""
        assert prompt.startswith("Discard the 2 other attempts, keeping fix-login.claude-2, "
                                 "2 of them LOSING work? y removes"), prompt  # fmt: skip
        for name in ("pi-1", "codex-3"):
            assert f"legion/{FANOUT}.{name}-ab12cd (" in prompt, prompt
        assert "LOSING 1 uncommitted file (new.txt)" in prompt, prompt
        await pilot.press("y")
        await until(lambda: not trees["a1"].path.exists() and not trees["a3"].path.exists(),
                    what="the two worktrees removed")  # fmt: skip
        assert trees["a2"].path.exists()
        branches = git(repo, "branch", "--list", "--format=%(refname:short)", "legion/*").split()
        assert branches == [f"legion/{FANOUT}.claude-2-ab12cd"], branches


async def test_an_agents_key_on_a_group_row_says_what_the_row_is_and_asks_nothing() -> None:
    model = fanout_model()
    ops = FakeOps(model)
    app = make_app(model, ops, clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        app.railway.select(ROW)
        # The chart and the header's filter count the nodes on rows: not the group's.
        assert ROW not in app.railway.visible_ids() and "a1" in app.railway.visible_ids()
        await pilot.press("x")
        await pilot.pause()
        said = [n.message for n in app.notifications]
        assert said == [f"{FANOUT} is a fan-out, not an agent: Enter compares its attempts; "
                        "select one of them to act on it."], said  # fmt: skip
        assert not app.main_screen.confirm_bar.asking and ops.calls == []


async def test_a_fanout_of_simulated_attempts_is_marked_sim_on_its_row() -> None:
    model = fanout_model()
    for node_id in ("a1", "a2", "a3"):
        model.upsert(replace(model.nodes[node_id].node, kind="sim"))
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=(120, 40)):
        row = app.railway.row_of(ROW)
        assert row is not None
        text = app.railway.render_line(row - int(app.railway.scroll_offset.y)).text
        assert f"◇ {FANOUT} sim " in text, text
