"""The Diff tab and the end of a unit of work in the dashboard (issues 12 and 28), on a
real git repository: the tab reads committed and uncommitted work; `L` names the sha it
lands and lands it after `y` (`m` another mode, `c` commits first), then offers to clean
up; `c` commits (`e` edits the message); `P` pushes the agent's branch and opens a PR
through `gh`; `D` names what would be lost; any other key cancels; a conflict is refused
in git's words."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock
from land_helpers import agent_work, bare_remote, make_repo, open_diff_tab
from supervisor_helpers import git, until, use_git_identity
from textual.pilot import Pilot
from textual.widgets import TextArea

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.git.land import LandPlan
from legion_tui.git.review import FileChange
from legion_tui.model import NodeStatus
from legion_tui.ops import Workspace
from legion_tui.widgets.commit_message import CommitMessageScreen
from legion_tui.widgets.confirm import ConfirmBar, ConfirmRequest
from legion_tui.widgets.landing import land_prompt

pytestmark = pytest.mark.host

_NO = ConfirmRequest("land", None, "")  # what a prompt reads as while none is asked

SETTLED = "n4"  # scout-0 in the canned legion: settled, and here it holds the worktree
LIVE = "n2"  # worker-0: still running


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def _app(repo: Path, run_dir: Path | None = None) -> tuple[LegionApp, FakeOps]:
    tree = await agent_work(repo)
    model = canned_model()
    ops = FakeOps(model)
    ops.workspaces = {SETTLED: Workspace(SETTLED, tree), LIVE: Workspace(LIVE, tree)}
    return make_app(model, ops, clock=fixed_clock, timers=False, run_dir=run_dir), ops


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
        assert text[1] == "1 commit · 2 files · uncommitted changes (c commits them)"
        assert "  M app.py  +2 -2" in text and "  ? notes.txt  new, not committed" in text
        assert any(t.endswith(" raise the page size") for t in text)
        assert tones["-PAGE_SIZE = 10"] == "fail" and tones["+PAGE_SIZE = 50"] == "ok"
        assert tones["+    return [1]"] == "ok"  # uncommitted
        assert tones["+todo: paginate"] == "ok"  # new, untracked
        head = app.screen.query_one("#detail-head").render()
        assert f"legion/worker-1-abc123 @ {view.review.head_sha[:7]}" in str(head)  # type: ignore[union-attr]
        # It scrolls: the diff is longer than the tab once the terminal is short.
        assert view.virtual_size.height == len(view.lines)


async def test_L_lands_the_named_sha_after_y_then_offers_to_clean_up(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    before = _head(repo)
    app, ops = await _app(repo)
    tree = ops.workspaces[SETTLED].tree
    tip = git(repo, "rev-parse", tree.branch)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_diff_tab(pilot, app, SETTLED)
        await pilot.press("L")
        await until(lambda: _bar(app).asking, what="the land confirm")
        request = _bar(app).request
        assert request is not None and request.kind == "land" and request.node_id == SETTLED
        assert request.prompt == (
            f"Land legion/worker-1-abc123 @ {tip[:7]} → main? y lands · m squash/rebase · c "
            "commits its uncommitted work first · any other key cancels · 1 commit: app.py +1 "
            "-1 · a merge commit on main"
        )
        assert _head(repo) == before  # nothing landed while it asks
        await _press(pilot, app, "y", "discard")
        assert git(repo, "rev-parse", "HEAD^2") == tip
        assert any(n.startswith(f"Landed legion/worker-1-abc123 @ {tip[:7]} → main at ")
                   for n in notes(app))  # fmt: skip
        request = _bar(app).request
        assert request is not None and request.prompt.startswith(
            "Remove legion/worker-1-abc123's worktree ("
        )
        assert ", LOSING 2 files? y discards that" in request.prompt
        assert "it loses 2 uncommitted files (app.py, notes.txt)" in request.prompt
        await pilot.press("y")
        # The discard's receipt, not the folder's absence: the branch goes after the
        # worktree (a soak run found the folder gone and the branch not yet).
        await until(lambda: any(n.startswith("Discarded legion/worker-1-abc123: ")
                                for n in notes(app)), what="the discard's receipt")  # fmt: skip
        assert not tree.path.exists()
        assert git(repo, "branch", "--list", tree.branch) == ""
        assert git(repo, "status", "--porcelain") == ""


def _asking(app: LegionApp, kind: str, text: str = "") -> bool:
    """The bar asks a question of `kind` whose prompt holds `text`."""
    request = _bar(app).request
    return request is not None and request.kind == kind and text in request.prompt


async def _press(pilot: Pilot[None], app: LegionApp, key: str, kind: str, text: str = "") -> str:
    """Press `key`; once the bar asks `kind` (with `text`), its prompt."""
    await pilot.press(key)
    await until(lambda: _asking(app, kind, text), what=f"{key} → the {kind} question {text}")
    return (_bar(app).request or _NO).prompt


async def test_m_cycles_the_mode_and_c_commits_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    app, ops = await _app(repo)
    tree = ops.workspaces[SETTLED].tree
    async with app.run_test(size=(160, 40)) as pilot:
        app.railway.select(SETTLED)
        await _press(pilot, app, "L", "land")
        await _press(pilot, app, "m", "land", "(squash of 1 commit)")
        prompt = await _press(pilot, app, "c", "commit")  # the agent's leftovers first
        assert prompt.startswith("Commit 2 files in legion/worker-1-abc123? y commits · e edits")
        prompt = await _press(pilot, app, "y", "land", "(squash of 2 commits)")
        assert "c commits" not in prompt  # nothing is left behind now
        await _press(pilot, app, "y", "discard")
        assert (repo / "notes.txt").read_text() == "todo: paginate\n"
        assert git(repo, "log", "-1", "--format=%s").endswith("(squash)")
        await pilot.press("n")  # keep them
        await until(lambda: "Cancelled — nothing discarded." in notes(app), what="kept")
        assert tree.path.is_dir()


async def test_the_land_prompt_starts_in_the_mode_the_settings_name(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / ".legion" / "runs" / "r1").mkdir(parents=True)
    (repo / ".legion" / "settings.toml").write_text('[land]\nmode = "rebase"\n')
    app, _ops = await _app(repo, repo / ".legion" / "runs" / "r1")
    async with app.run_test(size=(160, 40)) as pilot:
        app.railway.select(SETTLED)
        prompt = await _press(pilot, app, "L", "land", "replayed onto main")
        assert "m merge/squash" in prompt


async def test_c_commits_with_an_edited_message(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    app, ops = await _app(repo)
    tree = ops.workspaces[SETTLED].tree
    async with app.run_test(size=(160, 40)) as pilot:
        app.railway.select(SETTLED)
        await _press(pilot, app, "c", "commit")
        await pilot.press("e")
        await until(lambda: isinstance(app.screen, CommitMessageScreen), what="the editor")
        area = app.screen.query_one(TextArea)
        area.text = "Paginate items\n\nby hand"
        await _press(pilot, app, "ctrl+s", "commit", "“Paginate items”")  # asked again
        await pilot.press("y")
        await until(lambda: git(tree.path, "status", "--porcelain") == "", what="the commit")
        assert git(tree.path, "log", "-1", "--format=%B") == "Paginate items\n\nby hand"


async def test_P_pushes_the_agents_branch_and_shows_the_pr_url_gh_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "project")
    remote = bare_remote(repo, tmp_path / "remote.git")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(
        '#!/bin/sh\n[ "$1" = auth ] && exit 0\necho https://github.example/acme/p/pull/3\n'
    )
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app, ops = await _app(repo)
    tree = ops.workspaces[SETTLED].tree
    async with app.run_test(size=(160, 40)) as pilot:
        app.railway.select(SETTLED)
        prompt = await _press(pilot, app, "P", "push")
        assert prompt.startswith(
            f"Push {tree.branch} @ {git(repo, 'rev-parse', '--short', tree.branch)} → "
            f"origin/{tree.branch} and open a PR (gh)? y pushes"
        )
        await pilot.press("y")
        await until(lambda: any("PR: https://github.example/acme/p/pull/3" in n
                                for n in notes(app)), what="the receipt")  # fmt: skip
        assert git(remote, "rev-parse", tree.branch) == git(repo, "rev-parse", tree.branch)


async def test_D_names_the_loss_and_any_other_key_keeps_the_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    app, ops = await _app(repo)
    tree = ops.workspaces[SETTLED].tree
    async with app.run_test(size=(200, 40)) as pilot:
        app.railway.select(SETTLED)
        prompt = await _press(pilot, app, "D", "discard")
        assert ", LOSING 1 commit, 2 files? y discards that" in prompt
        assert "it loses 1 commit in no other branch" in prompt
        assert "2 uncommitted files (app.py, notes.txt)" in prompt
        await pilot.press("n")
        await until(lambda: "Cancelled — nothing discarded." in notes(app), what="kept")
        assert tree.path.is_dir() and git(repo, "branch", "--list", tree.branch)
        await _press(pilot, app, "D", "discard")
        await pilot.press("y")
        await until(lambda: not tree.path.exists(), what="discarded")
        assert any("lost: 1 commit in no other branch" in n for n in notes(app))


async def test_a_dirty_checkout_lands_from_the_dashboard(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / "app.py").write_text("PAGE_SIZE = 10\n\ndef items():\n    return []\n# mine\n")
    app, _ops = await _app(repo)
    async with app.run_test(size=(200, 40)) as pilot:
        app.railway.select(SETTLED)
        await _press(pilot, app, "L", "land", "your 1 changed file stashed and put back")
        await _press(pilot, app, "y", "discard")
        assert (repo / "app.py").read_text() == (
            "PAGE_SIZE = 50\n\ndef items():\n    return []\n# mine\n"
        )
        assert any("Your changes were stashed and are back." in n for n in notes(app))


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


async def test_a_lead_is_not_landed_while_a_member_still_works_in_its_worktree(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "project")
    before = _head(repo)
    app, ops = await _app(repo)
    lead = app.model.nodes[LIVE].node.parent_id  # worker-0's lead, settled here
    assert lead is not None
    app.model.upsert(replace(app.model.nodes[lead].node, status=NodeStatus.SETTLED))
    ops.workspaces[lead] = Workspace(lead, ops.workspaces[SETTLED].tree)
    async with app.run_test(size=(160, 40)) as pilot:
        app.railway.select(lead)
        await pilot.press("L")
        await until(lambda: any("still works in" in n for n in notes(app)), what="refused")
        name = app.model.nodes[lead].node.name
        assert f"worker-0 still works in {name}'s worktree (running): land {name} once" in (
            notes(app)[-1]
        )
        assert not _bar(app).asking and _head(repo) == before


def test_the_prompt_names_the_files_and_counts_the_rest() -> None:
    files = tuple(FileChange("M", name, 1, 0) for name in "abcde")
    plan = LandPlan(
        Path("/p"), "legion/w-1", "f" * 40, "main", "0" * 40, "rebase",
        (("1111111", "one"), ("2222222", "two")), files, (), (), False, ("hooks changed",),
    )  # fmt: skip
    assert land_prompt(plan) == (
        "Land legion/w-1 @ fffffff → main? y lands · m merge/squash · any other key cancels · "
        "2 commits: a +1 -0, b +1 -0 +3 more · 2 commits replayed onto main · ⚠ hooks changed"
    )
