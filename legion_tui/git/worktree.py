"""A centurion's git worktree and its delivery (SPEC §6.7).

Where the worktree lives: `<project>/.legion/worktrees/<name>-<nonce>`. SPEC §2 allows
one write outside `.legion/` for a centurion's worktree; we do not need it for the
checkout itself, so the checkout stays inside `.legion/` where every other file of a
legion lives (one place to look, one place to clean). The only bytes written outside are
the ones git itself must write for any worktree: `.git/worktrees/<id>/` and the branch
ref `legion/<name>-<nonce>` — that is what the SPEC's exception covers. A `.gitignore`
holding `*` inside `.legion/worktrees/` keeps the parent checkout's `git status` clean
(a nested checkout would otherwise show up as an untracked directory there).

Nothing here deletes anything on its own: `remove_worktree` exists for an explicit user
command only, and refuses a dirty checkout unless forced.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from legion_tui import receipts
from legion_tui.git.process import GIT_TIMEOUT, run_tool

__all__ = [
    "BRANCH_PREFIX",
    "SANDBOX_IDENTITY",
    "Delivery",
    "Worktree",
    "WorktreeDecision",
    "WorktreeError",
    "commit_paths",
    "create_sandbox_repo",
    "create_worktree",
    "delivery",
    "demote_worktree",
    "is_folder",
    "is_git_repo",
    "launch_record",
    "on_disk",
    "own_worktree",
    "prepare_worktree",
    "recorded_worktree",
    "remove_worktree",
    "worktrees_dir",
]

BRANCH_PREFIX = "legion/"
LINK_TIMEOUT = 20.0  # gh/glab talk to the network; never let them hold a delivery up
# Who commits in a sandbox repository (the demo's): never the user's global identity.
SANDBOX_IDENTITY = ("legion demo", "demo@legion.invalid")
COMMIT_ATTEMPTS = 20  # teammates share one worktree index: retry a commit that met its lock


class WorktreeError(RuntimeError):
    """git refused or failed; the message carries git's own words."""


@dataclass(frozen=True, slots=True)
class Worktree:
    path: Path  # the checkout (top of the repository's tree)
    branch: str  # legion/<name>-<nonce>
    base_sha: str  # the commit it was created from
    cwd: Path  # where the team works: `path` + the project's prefix inside its repo


def launch_record(tree: Worktree) -> dict[str, str]:
    """What a `node_launched` event records of the node's worktree (`recorded_worktree`
    reads it back: a reopened host, a view, the CLI's end-of-work verbs)."""
    return {
        "worktree": str(tree.path),
        "worktree_cwd": str(tree.cwd),
        "branch": tree.branch,
        "base_sha": tree.base_sha,
    }


def recorded_worktree(launched: Mapping[str, Any]) -> Worktree | None:
    """The worktree a `node_launched` event's data names (it may be gone since); None
    when the node had none."""
    if not launched.get("worktree"):
        return None
    path = str(launched["worktree"])
    return Worktree(
        path=Path(path),
        branch=str(launched.get("branch", "")),
        base_sha=str(launched.get("base_sha", "")),
        cwd=Path(str(launched.get("worktree_cwd", path))),
    )


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a centurion delivers: a branch and a commit; a link only if a tool reported one."""

    branch: str
    head_sha: str
    link: str | None = None
    commits: int = 0  # commits on the branch since base_sha (when base was known)
    dirty: bool = False  # uncommitted changes left in the checkout (not part of the delivery)


@dataclass(frozen=True, slots=True)
class WorktreeDecision:
    use: bool
    warning: str | None = None


def own_worktree(from_root: bool, role: str, requested: bool | None, per_agent: bool) -> bool:
    """Whether a worker or scout gets a worktree of its own: one started from root (by
    the user, issue 12), so two agents side by side never edit one checkout — unless
    `[worktrees] perAgent = false` or the spawn asked for none. A team's members (their
    parent is a lead) work in their lead's worktree, as before."""
    return per_agent and from_root and role in ("worker", "scout") and requested is not False


def demote_worktree(
    role: str, name: str, requested: bool | None = None, *, own: bool = False
) -> WorktreeDecision:
    """A centurion holds a worktree (upstream REV-17), and so does an agent started from
    root on its own (`own`, see `own_worktree`). Anyone else asking for one is demoted to
    none — not refused, because a refusal would block the launch for a flag the parent
    may not even control — with exactly one warning in the spawn's answer. Those two
    always get one (when the project is a git repository).
    """
    if role == "centurion" or own:
        return WorktreeDecision(use=True)
    if requested:
        return WorktreeDecision(use=False, warning=receipts.worktree_demoted(name, role))
    return WorktreeDecision(use=False)


# ----- git plumbing -------------------------------------------------------------------


async def _git(cwd: Path, *args: str, bound: float = GIT_TIMEOUT, isolated: bool = False) -> str:
    code, out, err = await run_tool(["git", *args], cwd, bound, isolated=isolated)
    if code != 0:
        raise WorktreeError(f"git {' '.join(args)}: {err.strip() or f'exit {code}'}")
    return out.strip()


async def is_git_repo(path: Path) -> bool:
    """True inside a git working tree (bare repositories and plain folders: False)."""
    if shutil.which("git") is None:
        return False
    code, out, _ = await run_tool(["git", "rev-parse", "--is-inside-work-tree"], Path(path))
    return code == 0 and out.strip() == "true"


def is_folder(path: Path | None) -> bool:
    """A folder is there (a discarded worktree is not); one stat, fine in the loop."""
    return path is not None and path.is_dir()


def on_disk(tree: Worktree) -> Path | None:
    """The worktree's folder, or None once it was discarded (its branch may remain)."""
    return tree.path if is_folder(tree.path) else None


def worktrees_dir(project: Path) -> Path:
    return Path(project) / ".legion" / "worktrees"


def _prepare_dir(project: Path) -> Path:
    folder = worktrees_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# legion worktrees: checkouts of their own, not part of this one\n*\n")
    return folder


async def head_commit(project: Path) -> str:
    """The commit HEAD names; WorktreeError (saying so) where there is none to branch
    from: not a git repository, or no commit yet."""
    try:
        return await _git(project, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except WorktreeError as err:
        raise WorktreeError(
            f"cannot create a worktree in {project}: it is not a git repository with a "
            f"commit to branch from ({err})"
        ) from err


async def create_worktree(
    project: Path, name: str, *, nonce: str | None = None, base: str | None = None
) -> Worktree:
    """`git worktree add -b legion/<name>-<nonce> .legion/worktrees/<name>-<nonce> HEAD`
    (or `base`: the one commit every attempt of a fan-out starts from).

    Raises WorktreeError when the project is not a git repository or has no commit yet
    (there is nothing to branch from) — call it only after `is_git_repo`.
    """
    nonce = nonce or secrets.token_hex(3)
    slug = f"{name}-{nonce}"
    try:
        prefix = await _git(project, "rev-parse", "--show-prefix")
        # git's own (symlink-free) name of the project: the path is reported to agents
        project = Path(await _git(project, "rev-parse", "--show-toplevel")) / prefix
    except WorktreeError as err:
        raise WorktreeError(
            f"cannot create a worktree in {project}: it is not a git repository with a "
            f"commit to branch from ({err})"
        ) from err
    base_sha = base or await head_commit(project)
    path = _prepare_dir(project) / slug
    branch = f"{BRANCH_PREFIX}{slug}"
    await _git(project, "worktree", "add", "-b", branch, str(path), base_sha)
    return Worktree(path=path, branch=branch, base_sha=base_sha, cwd=path / prefix)


async def prepare_worktree(
    project: Path, role: str, name: str, requested: bool | None = None, *, own: bool = False,
    base: str | None = None,
) -> tuple[Worktree | None, str | None]:
    """The launch-time decision in one call: (the worktree, the warning for the spawn's
    answer). A centurion (or an agent with `own`) in a git repository gets a new
    worktree; elsewhere it works in the project itself (no warning: nothing was asked
    that could be given) — as does an `own` agent in a repository with no commit yet,
    which nobody asked to isolate; anyone else asking for one is demoted with one
    warning. Call it only after every refusal check (G1–G4, budgets, names): a refused
    spawn must leave no worktree.
    """
    decision = demote_worktree(role, name, requested, own=own)
    if not decision.use or not await is_git_repo(project):
        return None, decision.warning
    if own and role != "centurion" and base is None:
        code, _out, _err = await run_tool(["git", "rev-parse", "--verify", "-q", "HEAD"], project)
        if code != 0:
            return None, None  # nothing to branch from yet, and nobody asked for a branch
    return await create_worktree(project, name, base=base), None


async def _remote_link(worktree: Path, branch: str) -> str | None:
    """The MR/PR URL that gh or glab reports for `branch`, or None.

    Only a URL a tool printed is ever returned: no remote, no tool, a tool error, no
    open PR/MR, or output that is not an http(s) URL — all mean None (upstream REV-29:
    the branch and sha are the delivery; a link is a convenience, never invented).
    """
    code, remotes, _ = await run_tool(["git", "remote"], worktree)
    if code != 0 or not remotes.split():
        return None
    code, url, _ = await run_tool(["git", "remote", "get-url", remotes.split()[0]], worktree)
    prefer_glab = code == 0 and "gitlab" in url.lower()
    tools = ["glab", "gh"] if prefer_glab else ["gh", "glab"]
    for tool in tools:
        if shutil.which(tool) is None:
            continue
        if tool == "gh":
            argv = ["gh", "pr", "view", branch, "--json", "url", "--jq", ".url"]
        else:
            argv = ["glab", "mr", "view", branch, "--output", "json"]
        code, out, _ = await run_tool(argv, worktree, LINK_TIMEOUT)
        if code != 0:
            continue
        link = _link_from(tool, out)
        if link is not None:
            return link
    return None


def _link_from(tool: str, out: str) -> str | None:
    text = out.strip()
    if tool == "glab":
        try:
            data = json.loads(text)
        except ValueError:
            return None
        text = str(data.get("web_url", "")) if isinstance(data, dict) else ""
    first = text.splitlines()[0].strip() if text else ""
    if first.startswith(("https://", "http://")) and " " not in first:
        return first
    return None


async def delivery(worktree: Worktree | Path, base_sha: str | None = None) -> Delivery:
    """Branch + HEAD sha of a worktree (+ a PR/MR link only when a tool reports one)."""
    if isinstance(worktree, Worktree):
        path, base_sha = worktree.path, base_sha or worktree.base_sha
    else:
        path = Path(worktree)
    head_sha = await _git(path, "rev-parse", "HEAD")
    branch = await _git(path, "rev-parse", "--abbrev-ref", "HEAD")
    commits = 0
    if base_sha:
        commits = int(await _git(path, "rev-list", "--count", f"{base_sha}..HEAD") or "0")
    dirty = bool(await _git(path, "status", "--porcelain", "--untracked-files=normal"))
    link = await _remote_link(path, branch) if branch != "HEAD" else None
    return Delivery(branch=branch, head_sha=head_sha, link=link, commits=commits, dirty=dirty)


async def create_sandbox_repo(path: Path, files: dict[str, str], message: str) -> str:
    """A fresh repository at `path` holding `files` in one commit; returns its sha.

    For a host that needs a repository of its own (the demo must never branch in the
    user's). The identity, no signing and no hooks live in the repository's own config,
    so the worktrees made from it — and the commits made there — need nothing of the
    user's git configuration. Raises WorktreeError when git is missing or refuses.
    """
    if shutil.which("git") is None:
        raise WorktreeError("git is not on PATH")
    _seed_files(path, {})
    await _git(path, "init", "-q", isolated=True)
    no_hooks = path / ".git" / "no-hooks"
    _seed_files(no_hooks, {})
    name, email = SANDBOX_IDENTITY
    for key, value in (
        ("user.name", name),
        ("user.email", email),
        ("commit.gpgsign", "false"),
        ("core.hooksPath", str(no_hooks)),
    ):
        await _git(path, "config", key, value, isolated=True)
    _seed_files(path, files)
    await _git(path, "add", "-A", isolated=True)
    await _git(path, "commit", "-q", "-m", message, isolated=True)
    return await _git(path, "rev-parse", "HEAD", isolated=True)


def _seed_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


async def commit_paths(
    worktree: Path, paths: list[str], message: str, *, author: str | None = None
) -> str:
    """Commit exactly `paths` (relative to `worktree`) in a sandbox worktree; returns
    the new HEAD sha. Only these paths go in, whatever a teammate has half-written next
    to them; a commit that meets the shared index's lock is retried (bounded)."""
    args = ["commit", "-q", "-m", message]
    if author:
        args.append(f"--author={author}")
    last = ""
    for attempt in range(COMMIT_ATTEMPTS):
        code, _out, err = await run_tool(["git", "add", "--", *paths], worktree, isolated=True)
        if code == 0:
            code, _out, err = await run_tool(["git", *args, "--", *paths], worktree, isolated=True)
        if code == 0:
            return await _git(worktree, "rev-parse", "HEAD", isolated=True)
        last = err.strip()
        if "index.lock" not in last:
            break
        await asyncio.sleep(0.02 * (attempt + 1))  # a teammate is committing right now
    raise WorktreeError(f"git commit in {worktree}: {last or 'failed'}")


async def remove_worktree(project: Path, worktree: Path, *, force: bool = False) -> None:
    """Remove a checkout (its branch is kept: the branch *is* the delivery).

    For an explicit user command only; nothing in the supervisor calls it. git itself
    refuses a checkout with uncommitted changes unless `force`.
    """
    args = ["worktree", "remove"]
    if force:
        args.append("--force")
    await _git(Path(project), *args, str(worktree))
