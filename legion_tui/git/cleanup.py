"""Clean up after agents (`D`, `legion discard`, `legion gc`) without deleting work.

An agent's worktree and branch hold work that exists nowhere else when the branch has
commits no other branch, tag or remote holds and whose changes the user's branch does not
already carry (a squash or a replay lands the changes under other commits), or when the
worktree holds uncommitted or new files. Discarding such work is refused unless the
caller names exactly that loss (the confirm showed it); anything else is removed, with
the branch's last sha in the receipt so `git branch NAME SHA` can bring it back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from legion_tui.git.land import holds_changes
from legion_tui.git.process import GitRefused, git, git_ran, lines
from legion_tui.git.worktree import BRANCH_PREFIX, is_folder, worktrees_dir
from legion_tui.receipts import plural

__all__ = [
    "Leftover",
    "Loss",
    "WorkState",
    "discard",
    "human_size",
    "inventory",
    "loss_of",
    "size_on_disk",
]

WorkState = Literal["landed", "unlanded", "dirty"]


@dataclass(frozen=True, slots=True)
class Loss:
    """What discarding would lose: commits nowhere else, files not committed."""

    commits: tuple[str, ...]  # `sha subject`, newest first
    files: tuple[str, ...]  # `git status --porcelain` lines of the worktree

    def __bool__(self) -> bool:
        return bool(self.commits or self.files)

    def counts(self) -> str:
        """`1 commit, 2 files`: the loss in two numbers (a narrow prompt keeps these)."""
        parts = []
        if self.commits:
            parts.append(plural(len(self.commits), "commit"))
        if self.files:
            parts.append(plural(len(self.files), "file"))
        return ", ".join(parts)

    def says(self) -> str:
        parts = []
        if self.commits:
            n = len(self.commits)
            named = ", ".join(self.commits[:3]) + (" …" if n > 3 else "")
            parts.append(f"{plural(n, 'commit')} in no other branch ({named})")
        if self.files:
            n = len(self.files)
            names = ", ".join(f[3:] for f in self.files[:3])
            parts.append(f"{plural(n, 'uncommitted file')} ({names}{' …' if n > 3 else ''})")
        return " and ".join(parts)


@dataclass(frozen=True, slots=True)
class Leftover:
    """An agent's worktree and/or branch, as `legion gc` lists it."""

    branch: str
    path: Path | None  # None: the branch has no worktree any more
    head: str
    size: int  # bytes on disk of the worktree
    state: WorkState
    loss: Loss


def size_on_disk(path: Path | None) -> int:
    """Bytes the folder takes on disk (allocated blocks; links not followed)."""
    if path is None:
        return 0
    total = 0
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return total


async def loss_of(checkout: Path, branch: str, path: Path | None) -> Loss:
    """What removing `branch` and its worktree `path` would lose."""
    commits: list[str] = []
    found = await git_ran(checkout, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if found.code == 0:
        tip = found.out.strip()
        only_here = await git(
            checkout, "log", "--format=%h %s", f"refs/heads/{branch}",
            "--not", f"--exclude={branch}", "--branches", "--tags", "--remotes",
        )  # fmt: skip
        if only_here.strip() and not await holds_changes(checkout, "HEAD", tip):
            commits = lines(only_here)
    files: list[str] = []
    if is_folder(path):
        assert path is not None
        files = lines(await git(path, "status", "--porcelain", "--untracked-files=all"))
    return Loss(tuple(commits), tuple(files))


async def discard(checkout: Path, branch: str, path: Path | None, *, accept: Loss | None) -> str:
    """Remove the worktree and delete the branch. Refused when that loses work, unless
    `accept` is exactly the loss found now (what the confirm named)."""
    loss = await loss_of(checkout, branch, path)
    if loss and loss != accept:
        raise GitRefused(
            f"{branch} holds work that exists nowhere else: {loss.says()}; "
            "nothing was discarded (land or push it first, or confirm that loss)"
        )
    said = []
    if is_folder(path):
        assert path is not None
        size = size_on_disk(path)
        await git(checkout, "worktree", "remove", "--force", str(path))
        said.append(f"worktree {path} removed ({human_size(size)})")
    await git_ran(checkout, "worktree", "prune")
    found = await git_ran(checkout, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    if found.code == 0:
        await git(checkout, "branch", "-D", "--quiet", branch)
        tip = found.out.strip()[:7]
        said.append(f"branch {branch} deleted (was {tip}; `git branch {branch} {tip}` restores it)")
    if not said:
        raise GitRefused(f"{branch} has neither a worktree nor a branch left; nothing to discard")
    lost = f" — lost: {loss.says()}" if loss else ""
    return f"Discarded {branch}: {'; '.join(said)}{lost}."


def human_size(count: int) -> str:
    """`812 B`, `4.2 MB`: a size for a person."""
    size = float(count)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _inside(path: Path | None, folder: Path) -> bool:
    return path is not None and path.resolve().is_relative_to(folder)


async def inventory(project: Path, *, busy: frozenset[str] = frozenset()) -> list[Leftover]:
    """Every agent branch (`legion/…`) and worktree under `.legion/worktrees/` of the
    repository, but those in `busy` (held by a live agent), with size and state."""
    checkout = Path((await git(project, "rev-parse", "--show-toplevel")).strip())
    folder = worktrees_dir(project).resolve()
    paths: dict[str, Path] = {}
    current: Path | None = None
    for line in lines(await git(checkout, "worktree", "list", "--porcelain")):
        if line.startswith("worktree "):
            current = Path(line.removeprefix("worktree "))
        elif line.startswith("branch refs/heads/") and _inside(current, folder):
            assert current is not None
            paths[line.removeprefix("branch refs/heads/")] = current
    refs = await git(checkout, "for-each-ref", "--format=%(refname:short)\t%(objectname)",
                     f"refs/heads/{BRANCH_PREFIX}")  # fmt: skip
    heads = dict(entry.split("\t", 1) for entry in lines(refs))
    found: list[Leftover] = []
    for branch in sorted(set(heads) | set(paths)):
        if branch in busy:
            continue
        path = paths.get(branch)
        loss = await loss_of(checkout, branch, path)
        state: WorkState = "dirty" if loss.files else "unlanded" if loss.commits else "landed"
        found.append(Leftover(branch, path, heads.get(branch, ""), size_on_disk(path), state, loss))
    return found
