"""The Diff tab and the land flow in the dashboard (issue 12 item 3), on a real git
repository: the tab reads committed and uncommitted work, `L` asks before it merges and
again before it pushes, any other key cancels, a conflict is refused in git's words."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from land_helpers import agent_work, make_repo, open_diff_tab
from supervisor_helpers import git, until, use_git_identity

from legion_tui.app import LegionApp, make_app
from legion_tui.ops import Workspace
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.landing import land_prompt

SETTLED = "n4"  # scout-0 in the canned legion: settled, and here it holds the worktree
LIVE = "n2"  # worker-0: still running


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app._notifications]


async def _app(repo: Path) -> tuple[LegionApp, FakeOps]:
    tree = await agent_work(repo)
    model = canned_model()
    ops = FakeOps(model)
    ops.workspaces = {SETTLED: Workspace(SETTLED, tree), LIVE: Workspace(LIVE, tree)}
    return make_app(model, ops, clock=fixed_clock, timers=False), ops


def _bar(app: LegionApp) -> ConfirmBar:
    return app.screen.query_one(ConfirmBar)


def _head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


async def test_the_diff_tab_shows_committed_and_uncommitted_changes(tmp_path: Path) -> None:
    app, _ops = await _app(make_repo(tmp_path / "project"))
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_diff_tab(pilot, app, SETTLED)
        text = [line for line, _tone in view.lines]
        tones = dict(view.lines)
        assert text[0].startswith("legion/worker-1-abc123 @ ")
        assert text[1] == "1 commit · 2 files · uncommitted changes (shown, not landed)"
        assert "  M app.py  +2 -2" in text and "  ? notes.txt  new, not committed" in text
        assert any(t.endswith(" raise the page size") for t in text)
        assert tones["-PAGE_SIZE = 10"] == "fail" and tones["+PAGE_SIZE = 50"] == "ok"
        assert tones["+    return [1]"] == "ok"  # uncommitted
        assert tones["+todo: paginate"] == "ok"  # new, untracked
        head = app.screen.query_one("#detail-head").render()
        assert f"legion/worker-1-abc123 @ {view.review.head_sha[:7]}" in str(head)  # type: ignore[union-attr]
        # It scrolls: the diff is longer than the tab once the terminal is short.
        assert view.virtual_size.height == len(view.lines)


async def test_L_lands_after_y_and_pushes_after_a_second_y(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    before = _head(repo)
    app, _ops = await _app(repo)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_diff_tab(pilot, app, SETTLED)
        await pilot.press("L")
        await until(lambda: _bar(app).asking, what="the land confirm")
        request = _bar(app).request
        assert request is not None and request.kind == "land" and request.node_id == SETTLED
        assert request.prompt == (
            "Land legion/worker-1-abc123 → main (1 commit: app.py)? y confirms · any other "
            "key cancels · its uncommitted changes stay behind"
        )
        assert _head(repo) == before  # nothing merged while it asks
        await pilot.press("y")
        await until(lambda: _bar(app).asking, what="the push confirm")
        assert _head(repo) != before
        assert git(repo, "log", "-1", "--format=%s") == "Land legion/worker-1-abc123"
        assert git(remote, "rev-parse", "main") == before  # nothing pushed while it asks
        request = _bar(app).request
        assert request is not None and request.prompt.startswith("Push main → origin/main?")
        await pilot.press("y")
        await until(lambda: git(remote, "rev-parse", "main") == _head(repo), what="the push")
        await until(lambda: "Pushed main → origin/main." in notes(app), what="the receipt")
        assert any(n.startswith("Landed legion/worker-1-abc123 → main at ") for n in notes(app))


async def test_any_other_key_cancels_the_land(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    before = _head(repo)
    app, _ops = await _app(repo)
    async with app.run_test(size=(120, 40)) as pilot:
        app.railway.select(SETTLED)
        await pilot.press("L")  # from the tree too
        await until(lambda: _bar(app).asking, what="the land confirm")
        await pilot.press("n")
        await until(lambda: "Cancelled — nothing landed." in notes(app), what="the cancel")
        assert _head(repo) == before and git(repo, "status", "--porcelain") == ""


async def test_a_conflict_is_refused_in_gits_words_and_nothing_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    app, _ops = await _app(repo)
    async with app.run_test(size=(120, 40)) as pilot:
        app.railway.select(SETTLED)
        await pilot.press("L")
        await until(lambda: _bar(app).asking, what="the land confirm")
        # The user commits a clashing change while the prompt is open.
        (repo / "app.py").write_text("PAGE_SIZE = 25\n\ndef items():\n    return []\n")
        git(repo, "commit", "-qam", "mine: 25")
        before = _head(repo)
        await pilot.press("y")
        await until(
            lambda: any("CONFLICT (content): Merge conflict in app.py" in n for n in notes(app)),
            what="git's refusal",
        )
        assert _head(repo) == before and git(repo, "status", "--porcelain") == ""
        assert not (repo / ".git" / "MERGE_HEAD").exists()


async def test_a_live_agent_or_one_without_a_worktree_is_not_landed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    before = _head(repo)
    app, _ops = await _app(repo)
    async with app.run_test(size=(120, 40)) as pilot:
        app.railway.select(LIVE)
        await pilot.press("L")
        await pilot.pause()
        assert "worker-0 is still running: land it once it has settled." in notes(app)
        app.railway.select("n5")  # worker-2: no worktree of its own
        await pilot.press("L")
        await pilot.pause()
        assert "worker-2 works in the project itself: it has no branch to land." in notes(app)
        assert not _bar(app).asking and _head(repo) == before


def test_the_prompt_names_the_files_and_counts_the_rest() -> None:
    from legion_tui.land import LandPlan

    plan = LandPlan(Path("/p"), "legion/w-1", "main", ("a", "b", "c", "d", "e"), 2, False)
    assert land_prompt(plan) == (
        "Land legion/w-1 → main (2 commits: a, b +3 more)? y confirms · any other key cancels"
    )
