"""A real repository and an agent's worktree in it, for the land and Diff tab tests."""

from __future__ import annotations

import contextlib
from pathlib import Path

from supervisor_helpers import git, until
from textual.errors import NoWidget
from textual.pilot import Pilot
from textual.widgets import TabbedContent

from legion_tui.dashboard.app import LegionApp
from legion_tui.git.worktree import Worktree, create_worktree
from legion_tui.widgets.overlay.diff_view import DiffView

# Fixed dates: the same commits, hence the same shas, on every run (the Diff golden).
FIXED_DATES = {
    "GIT_AUTHOR_DATE": "2026-09-21T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-09-21T12:00:00+00:00",
}


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / ".gitignore").write_text(".legion/\n")
    (path / "app.py").write_text("PAGE_SIZE = 10\n\ndef items():\n    return []\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


def bare_remote(repo: Path, at: Path) -> Path:
    """A bare repository at `at` as the repo's `origin`, `main` pushed to it."""
    git(at.parent, "init", "-q", "--bare", str(at))
    git(repo, "remote", "add", "origin", str(at))
    git(repo, "push", "-q", "-u", "origin", "main")
    return at


async def agent_work(repo: Path) -> Worktree:
    """A worktree holding one commit, an uncommitted edit and a new untracked file."""
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    (tree.path / "app.py").write_text("PAGE_SIZE = 50\n\ndef items():\n    return []\n")
    git(tree.path, "commit", "-qam", "raise the page size")
    (tree.path / "app.py").write_text("PAGE_SIZE = 50\n\ndef items():\n    return [1]\n")
    (tree.path / "notes.txt").write_text("todo: paginate\n")
    return tree


async def open_diff_tab(pilot: Pilot[None], app: LegionApp, node_id: str) -> DiffView:
    """`o` on the node, then its Diff tab, once read (on open, and again when shown)."""
    app.railway.select(node_id)
    await pilot.press("o")
    await until(lambda: bool(app.screen.query("#diff")), what="the Diff tab")
    view = app.screen.query_one("#diff", DiffView)
    await until(lambda: view.loads >= 1, what="the first read of the worktree")
    app.screen.query_one("#detail-tabs", TabbedContent).active = "tab-diff"
    await until(lambda: view.loads >= 2, what="the read the tab's activation starts")
    # And placed on screen: a click sent before the compositor has the shown tab lands
    # where the hidden one was (a full run's click left the cursor on row 0).
    await until(lambda: _under(app, view), what="the Diff tab on screen")
    return view


def _under(app: LegionApp, view: DiffView) -> bool:
    """The screen routes a click on the view's top-left text cell to the view."""
    region = view.content_region
    if not region:
        return False
    with contextlib.suppress(NoWidget):
        return app.screen.get_widget_at(region.x, region.y)[0] is view
    return False
