"""A real repository and an agent's worktree in it, for the land and Diff tab tests."""

from __future__ import annotations

from pathlib import Path

from supervisor_helpers import git

from legion_tui.supervisor.worktree import Worktree, create_worktree

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


async def agent_work(repo: Path) -> Worktree:
    """A worktree holding one commit, an uncommitted edit and a new untracked file."""
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    (tree.path / "app.py").write_text("PAGE_SIZE = 50\n\ndef items():\n    return []\n")
    git(tree.path, "commit", "-qam", "raise the page size")
    (tree.path / "app.py").write_text("PAGE_SIZE = 50\n\ndef items():\n    return [1]\n")
    (tree.path / "notes.txt").write_text("todo: paginate\n")
    return tree
