"""Review and land on real git repositories in temp folders (issue 12 item 3): the
review sees committed and uncommitted work, a merge lands or is refused in git's words
with the checkout left as it was, a push reaches a local bare remote."""

from __future__ import annotations

from pathlib import Path

import pytest
from land_helpers import agent_work, make_repo
from supervisor_helpers import git, use_git_identity

from legion_tui.land import LandRefused, merge, plan_land, push, remote_of, review


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "project")


def _state(path: Path) -> tuple[str, str, str]:
    return (
        git(path, "rev-parse", "HEAD"),
        git(path, "status", "--porcelain"),
        git(path, "for-each-ref", "--format=%(refname) %(objectname)"),
    )


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
    assert seen.uncommitted and not seen.truncated
    assert _state(repo) == before  # reading changed nothing


async def test_land_merges_the_branch_into_the_checkouts_branch(repo: Path) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    assert (plan.checkout, plan.branch, plan.base) == (repo, tree.branch, "main")
    assert plan.files == ("app.py",) and plan.commits == 1 and plan.uncommitted
    receipt = await merge(tree, plan)
    assert receipt.startswith("Landed legion/worker-1-abc123 → main at ")
    assert (repo / "app.py").read_text().startswith("PAGE_SIZE = 50")  # committed work only
    assert "return []" in (repo / "app.py").read_text()
    assert git(repo, "log", "-1", "--format=%s") == "Land legion/worker-1-abc123"
    assert git(repo, "status", "--porcelain") == ""
    with pytest.raises(LandRefused, match="nothing to land"):
        await plan_land(tree)  # landed already


async def test_a_conflict_is_refused_in_gits_words_and_the_checkout_is_as_it_was(
    repo: Path,
) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    (repo / "app.py").write_text("PAGE_SIZE = 25\n\ndef items():\n    return []\n")
    git(repo, "commit", "-qam", "mine: 25")
    before = _state(repo)
    with pytest.raises(LandRefused) as refused:
        await merge(tree, plan)
    assert "CONFLICT (content): Merge conflict in app.py" in refused.value.message
    assert "the merge was aborted" in refused.value.message
    assert _state(repo) == before
    assert not (repo / ".git" / "MERGE_HEAD").exists()


async def test_a_checkout_with_uncommitted_changes_is_refused_before_the_confirm(
    repo: Path,
) -> None:
    tree = await agent_work(repo)
    (repo / "app.py").write_text("mine, not committed\n")
    with pytest.raises(LandRefused, match="uncommitted changes"):
        await plan_land(tree)
    assert (repo / "app.py").read_text() == "mine, not committed\n"


async def test_a_branch_switched_since_the_confirm_is_not_merged(repo: Path) -> None:
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    git(repo, "switch", "-q", "-c", "other")
    before = _state(repo)
    with pytest.raises(LandRefused, match="moved from main to other"):
        await merge(tree, plan)
    assert _state(repo) == before


async def test_push_reaches_a_local_bare_remote(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    tree = await agent_work(repo)
    plan = await plan_land(tree)
    await merge(tree, plan)
    assert await remote_of(plan) == ("origin", "main")
    assert await push(plan, "origin", "main") == "Pushed main → origin/main."
    assert git(remote, "rev-parse", "main") == git(repo, "rev-parse", "main")


async def test_no_remote_means_no_push_offered(repo: Path) -> None:
    tree = await agent_work(repo)
    assert await remote_of(await plan_land(tree)) is None
