"""Centurion worktrees on a real git repository in a temp folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from supervisor_helpers import git, use_git_identity

from legion_tui import receipts
from legion_tui.git.worktree import (
    WorktreeError,
    create_worktree,
    delivery,
    demote_worktree,
    is_git_repo,
    prepare_worktree,
    remove_worktree,
)

pytestmark = pytest.mark.host


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")
    return path


async def test_plain_folder_and_repo_detection(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert await is_git_repo(repo)
    assert not await is_git_repo(plain)


async def test_create_reports_branch_base_and_keeps_the_parent_clean(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    wt = await create_worktree(repo, "lead-api", nonce="abc123")
    assert wt.branch == "legion/lead-api-abc123"
    top = Path(git(repo, "rev-parse", "--show-toplevel"))
    assert wt.path == top / ".legion" / "worktrees" / "lead-api-abc123"
    assert wt.base_sha == head
    assert wt.cwd == wt.path
    assert (wt.path / "README.md").read_text() == "hello\n"
    assert git(wt.path, "rev-parse", "--abbrev-ref", "HEAD") == wt.branch
    assert wt.branch in git(repo, "branch", "--list", "legion/*")
    # the nested checkout does not show up as untracked in the parent checkout
    assert ".legion/worktrees" not in git(repo, "status", "--porcelain")


async def test_two_worktrees_for_the_same_name_get_different_nonces(repo: Path) -> None:
    first = await create_worktree(repo, "lead")
    second = await create_worktree(repo, "lead")
    assert first.branch != second.branch and first.path != second.path


async def test_delivery_is_branch_and_head_without_a_link_when_no_remote(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gh on PATH that would happily print a URL: without a remote it must not be asked.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "gh-was-asked"
    fake_gh = bin_dir / "gh"
    fake_gh.write_text(f"#!/bin/sh\ntouch {asked}\necho https://example.invalid/pr/1\n")
    fake_gh.chmod(fake_gh.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    wt = await create_worktree(repo, "lead")
    (wt.path / "feature.txt").write_text("work\n")
    git(wt.path, "add", "feature.txt")
    git(wt.path, "commit", "-q", "-m", "feature")
    result = await delivery(wt)
    assert result.branch == wt.branch
    assert result.head_sha == git(wt.path, "rev-parse", "HEAD") != wt.base_sha
    assert result.commits == 1
    assert result.dirty is False
    assert result.link is None
    assert not asked.exists()


async def test_link_only_when_a_remote_exists_and_the_tool_reports_one(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = await create_worktree(repo, "lead")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert (await delivery(wt)).link is None  # a remote but no gh/glab: still no link

    fake_gh = bin_dir / "gh"
    fake_gh.write_text('#!/bin/sh\n[ "$1 $2" = "pr view" ] && echo https://example.invalid/pr/7\n')
    fake_gh.chmod(fake_gh.stat().st_mode | stat.S_IEXEC)
    assert (await delivery(wt)).link == "https://example.invalid/pr/7"

    fake_gh.write_text("#!/bin/sh\necho 'no pull requests found' >&2\nexit 1\n")
    assert (await delivery(wt)).link is None  # the tool reports none: none


async def test_uncommitted_work_is_reported_as_dirty(repo: Path) -> None:
    wt = await create_worktree(repo, "lead")
    (wt.path / "scratch.txt").write_text("not committed\n")
    result = await delivery(wt)
    assert result.dirty is True
    assert result.head_sha == wt.base_sha and result.commits == 0


async def test_not_a_repo_and_no_commit_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError):
        await create_worktree(plain, "lead")
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(WorktreeError, match="commit"):
        await create_worktree(empty, "lead")
    assert not (empty / ".legion").exists()


async def test_project_below_the_repository_top_works_in_the_same_subfolder(repo: Path) -> None:
    sub = repo / "service"
    sub.mkdir()
    (sub / "app.py").write_text("print(1)\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "service")
    wt = await create_worktree(sub, "lead")
    top = Path(git(repo, "rev-parse", "--show-toplevel"))
    assert wt.path.parent == top / "service" / ".legion" / "worktrees"
    assert (wt.cwd / "app.py").exists()
    assert wt.cwd == wt.path / "service"


async def test_remove_is_explicit_and_refuses_dirty_checkouts(repo: Path) -> None:
    wt = await create_worktree(repo, "lead")
    (wt.path / "scratch.txt").write_text("x\n")
    with pytest.raises(WorktreeError):
        await remove_worktree(repo, wt.path)
    assert wt.path.exists()
    await remove_worktree(repo, wt.path, force=True)
    assert not wt.path.exists()
    assert wt.branch in git(repo, "branch", "--list", "legion/*")  # the delivery stays


def test_only_a_centurion_keeps_a_worktree() -> None:
    assert demote_worktree("centurion", "lead", requested=None).use is True
    assert demote_worktree("centurion", "lead", requested=True).warning is None


@pytest.mark.parametrize("role", ["worker", "scout", "root"])
def test_other_roles_asking_are_demoted_with_exactly_one_warning(role: str) -> None:
    decision = demote_worktree(role, "worker-2", requested=True)
    assert decision.use is False
    assert decision.warning == receipts.worktree_demoted("worker-2", role)
    assert decision.warning.count("\n") == 0
    assert "reserved for a centurion" in decision.warning


def test_roles_not_asking_get_no_warning() -> None:
    for requested in (None, False):
        assert demote_worktree("worker", "w", requested=requested).warning is None


async def test_prepare_gives_a_centurion_a_worktree_and_demotes_the_rest(
    repo: Path, tmp_path: Path
) -> None:
    tree, warning = await prepare_worktree(repo, "centurion", "lead")
    assert tree is not None and warning is None and tree.path.exists()
    tree, warning = await prepare_worktree(repo, "worker", "worker-2", requested=True)
    assert tree is None and warning == receipts.worktree_demoted("worker-2", "worker")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert await prepare_worktree(plain, "centurion", "lead") == (None, None)
    assert not (plain / ".legion").exists()
