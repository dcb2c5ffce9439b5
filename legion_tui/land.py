"""Review and land an agent's branch (issue 12): what its worktree changed against the
commit it was cut from, and the merge of its branch into the checkout it came from.

Every git call is a bounded subprocess in the host's loop (`worktree.run_tool`), never a
blocking one, and a refusal carries git's own words (its stderr, and its stdout, where
git reports a conflict). Reading (`review`, `plan_land`) changes nothing anywhere; only
`merge` and `push` touch the user's checkout or remote, and the dashboard calls them
only after a `y` confirm. A merge git cannot finish is aborted, so the checkout is left
as it was — which is why a checkout with uncommitted changes to tracked files is refused
first: `git merge --abort` cannot always give those back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from legion_tui.supervisor.worktree import Worktree, run_tool

__all__ = [
    "MAX_DIFF_BYTES",
    "FileChange",
    "LandPlan",
    "LandRefused",
    "Review",
    "merge",
    "plan_land",
    "push",
    "remote_of",
    "review",
]

GIT_BOUND = 60.0  # one git call; a hung git (a lock, a slow disk) is reported, not waited on
PUSH_BOUND = 120.0  # a push talks to another machine
MAX_DIFF_BYTES = 2 * 1024 * 1024  # what the Diff tab shows; the rest is one line saying so
MAX_UNTRACKED = 50  # new files shown in full; more are listed only
# Paths as they are (no octal quoting) and no pager, whatever the user's config says.
_PLAIN = ("-c", "core.quotePath=false", "--no-pager")


class LandRefused(Exception):
    """git refused or a check failed; `message` says why, in git's words where it spoke."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class FileChange:
    status: str  # git's letter: A M D T, `?` for a new file git does not track yet
    path: str
    added: int | None = None  # None: binary, or untracked (not counted)
    removed: int | None = None


@dataclass(frozen=True, slots=True)
class Review:
    """A worktree's changes against its base: committed and uncommitted together."""

    branch: str
    head_sha: str
    base_sha: str
    commits: tuple[tuple[str, str], ...]  # (short sha, subject), newest first
    files: tuple[FileChange, ...]
    diff: str  # unified, uncoloured; at most MAX_DIFF_BYTES
    truncated: bool
    uncommitted: bool  # the checkout holds changes no commit has yet


@dataclass(frozen=True, slots=True)
class LandPlan:
    """What `y` on the land confirm merges: `branch` into `base`, in `checkout`."""

    checkout: Path  # the user's checkout the worktree was made from
    branch: str
    base: str  # the branch checked out there now
    files: tuple[str, ...]
    commits: int
    uncommitted: bool  # the worktree holds changes no commit has: they are not landed


def _words(args: Sequence[str], code: int, out: str, err: str) -> str:
    said = "\n".join(part.strip() for part in (err, out) if part.strip())
    return f"git {' '.join(args[:2])}: {said or f'exit {code}'}"


async def _git(
    cwd: Path, *args: str, ok: tuple[int, ...] = (0,), bound: float = GIT_BOUND
) -> str:
    code, out, err = await run_tool(["git", *_PLAIN, *args], cwd, bound)
    if code not in ok:
        raise LandRefused(_words(args, code, out, err))
    return out


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


# ----- review -------------------------------------------------------------------------


async def review(tree: Worktree) -> Review:
    """The worktree against `base_sha`: its commits, the files changed (tracked and
    new), and one diff of the working tree against the base (so uncommitted edits show
    with the committed ones)."""
    path, base = tree.path, tree.base_sha
    head = (await _git(path, "rev-parse", "HEAD")).strip()
    log = await _git(path, "log", "--format=%h%x09%s", f"{base}..HEAD")
    commits = tuple((sha, subject) for sha, _, subject in (c.partition("\t") for c in _lines(log)))
    counts: dict[str, tuple[int | None, int | None]] = {}
    for line in _lines(await _git(path, "diff", "--no-renames", "--numstat", base)):
        added, removed, name = line.split("\t", 2)
        counts[name] = (
            int(added) if added.isdigit() else None,
            int(removed) if removed.isdigit() else None,
        )
    files = [
        FileChange(status[:1], name, *counts.get(name, (None, None)))
        for status, _, name in (
            line.partition("\t")
            for line in _lines(await _git(path, "diff", "--no-renames", "--name-status", base))
        )
    ]
    untracked = _lines(await _git(path, "ls-files", "--others", "--exclude-standard"))
    files += [FileChange("?", name) for name in untracked]
    parts = [await _git(path, "diff", "--no-color", "--no-renames", base)]
    for name in untracked[:MAX_UNTRACKED]:
        # --no-index exits 1 when the files differ, which a new file always does.
        parts.append(
            await _git(path, "diff", "--no-color", "--no-index", "--", "/dev/null", name, ok=(0, 1))
        )
    if len(untracked) > MAX_UNTRACKED:
        parts.append(f"… {len(untracked) - MAX_UNTRACKED} more new files, listed above\n")
    diff = "".join(parts)
    truncated = len(diff) > MAX_DIFF_BYTES
    if truncated:
        cut = diff.rfind("\n", 0, MAX_DIFF_BYTES)
        diff = diff[: cut + 1 if cut >= 0 else MAX_DIFF_BYTES]
    status = await _git(path, "status", "--porcelain", "--untracked-files=normal")
    return Review(
        branch=tree.branch,
        head_sha=head,
        base_sha=base,
        commits=commits,
        files=tuple(files),
        diff=diff,
        truncated=truncated,
        uncommitted=bool(status.strip()),
    )


# ----- land ---------------------------------------------------------------------------


async def _main_checkout(path: Path) -> Path:
    """The repository's main working tree (the first `git worktree list` names)."""
    for line in _lines(await _git(path, "worktree", "list", "--porcelain")):
        if line.startswith("worktree "):
            return Path(line.removeprefix("worktree "))
    raise LandRefused(f"git worktree list in {path} names no main checkout")


async def plan_land(tree: Worktree) -> LandPlan:
    """Everything the land confirm names, checked before it is asked: the checkout is
    on a branch, clean in what git tracks, and the agent's branch has commits it lacks."""
    checkout = await _main_checkout(tree.path)
    code, out, _err = await run_tool(
        ["git", *_PLAIN, "symbolic-ref", "--quiet", "--short", "HEAD"], checkout, GIT_BOUND
    )
    base = out.strip()
    if code != 0 or not base:
        raise LandRefused(
            f"{checkout} is not on a branch (detached HEAD): check out the branch "
            f"{tree.branch} should land in; nothing was merged"
        )
    if base == tree.branch:
        raise LandRefused(f"{checkout} has {base} itself checked out; nothing was merged")
    commits = int((await _git(checkout, "rev-list", "--count", f"{base}..{tree.branch}")).strip())
    if commits == 0:
        raise LandRefused(f"nothing to land: {tree.branch} has no commit that {base} lacks")
    changed = await _git(checkout, "status", "--porcelain", "--untracked-files=no")
    if changed.strip():
        raise LandRefused(
            f"{checkout} has uncommitted changes ({len(_lines(changed))} files): commit "
            f"or stash them first, a merge git cannot finish could not give them back; "
            f"nothing was merged"
        )
    files = tuple(_lines(await _git(checkout, "diff", "--name-only", f"{base}...{tree.branch}")))
    left = await _git(tree.path, "status", "--porcelain", "--untracked-files=normal")
    return LandPlan(checkout, tree.branch, base, files, commits, bool(left.strip()))


async def merge(tree: Worktree, confirmed: LandPlan) -> str:
    """Merge the branch into the checkout's branch, as confirmed; a receipt. The checks
    run again first (the user may have switched branch or edited since the confirm). A
    merge git stops (a conflict) is aborted: the refusal is git's words and the
    checkout is as it was."""
    plan = await plan_land(tree)
    if (plan.checkout, plan.base) != (confirmed.checkout, confirmed.base):
        raise LandRefused(
            f"{confirmed.checkout} moved from {confirmed.base} to {plan.base} since the "
            f"confirm; nothing was merged"
        )
    args = ("merge", "--no-ff", "--no-edit", "-m", f"Land {plan.branch}", plan.branch)
    code, out, err = await run_tool(["git", *_PLAIN, *args], plan.checkout, GIT_BOUND)
    if code != 0:
        said = _words(args, code, out, err)
        pending, _, _ = await run_tool(
            ["git", "rev-parse", "-q", "--verify", "MERGE_HEAD"], plan.checkout, GIT_BOUND
        )
        if pending == 0:  # stopped half-way: put the checkout back as it was
            await _git(plan.checkout, "merge", "--abort")
            said += "\n(the merge was aborted: your checkout is as it was)"
        raise LandRefused(said)
    head = (await _git(plan.checkout, "rev-parse", "--short", "HEAD")).strip()
    files = len(plan.files)
    return (
        f"Landed {plan.branch} → {plan.base} at {head}: {plan.commits} commit"
        f"{'s' if plan.commits != 1 else ''}, {files} file{'s' if files != 1 else ''}."
    )


async def remote_of(plan: LandPlan) -> tuple[str, str] | None:
    """(remote, branch) a landed base is pushed to: its upstream, else `origin` or the
    only remote under the same branch name; None when the repository has no remote."""
    code, out, _ = await run_tool(
        ["git", *_PLAIN, "rev-parse", "--abbrev-ref", "--symbolic-full-name", f"{plan.base}@{{u}}"],
        plan.checkout,
        GIT_BOUND,
    )
    remotes = _lines(await _git(plan.checkout, "remote"))
    upstream = out.strip()
    if code == 0 and "/" in upstream:
        for remote in remotes:  # a remote's name may itself hold a slash
            if upstream.startswith(remote + "/"):
                return remote, upstream.removeprefix(remote + "/")
    if "origin" in remotes:
        return "origin", plan.base
    return (remotes[0], plan.base) if len(remotes) == 1 else None


async def push(plan: LandPlan, remote: str, branch: str) -> str:
    """`git push <remote> <base>:<branch>`; a refusal (rejected, no access) is git's words."""
    await _git(plan.checkout, "push", remote, f"{plan.base}:{branch}", bound=PUSH_BOUND)
    return f"Pushed {plan.base} → {remote}/{branch}."
