"""What an agent's worktree changed against the commit it was cut from (the Diff tab,
`legion diff`): its commits, the files with +/-, one diff of committed, uncommitted and
new files together, and the paths it adds that the user's checkout ignores (`.env`, build
output: landing them would write where the user keeps files git does not protect).

Reading changes nothing anywhere.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from legion_tui.git.process import GitRefused, git, lines
from legion_tui.git.worktree import Worktree, is_folder

__all__ = ["MAX_DIFF_BYTES", "FileChange", "Review", "ignored_paths", "numstat", "review"]

MAX_DIFF_BYTES = 2 * 1024 * 1024  # what the Diff tab shows; the rest is one line saying so
MAX_UNTRACKED = 50  # new files shown in full; more are listed only


@dataclass(frozen=True, slots=True)
class FileChange:
    status: str  # git's letter: A M D T, `?` for a new file git does not track yet
    path: str
    added: int | None = None  # None: binary, or untracked (not counted)
    removed: int | None = None
    ignored: bool = False  # a path the checkout's ignore rules cover (.env, build/…)

    @property
    def counts(self) -> str:
        """`+3 -1`; `binary`; `new, not committed` for a file git does not track yet."""
        if self.status == "?":
            return "new, not committed"
        if self.added is None:
            return "binary"
        return f"+{self.added} -{self.removed}"


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

    @property
    def ignored(self) -> tuple[str, ...]:
        """Paths it adds that the checkout's ignore rules cover."""
        return tuple(change.path for change in self.files if change.ignored)


async def numstat(where: Path, *revs: str) -> list[FileChange]:
    """The files `git diff REVS` changes, with git's status letter and +/- counts."""
    counted, named = await asyncio.gather(
        git(where, "diff", "--no-renames", "--numstat", *revs),
        git(where, "diff", "--no-renames", "--name-status", *revs),
    )
    counts: dict[str, tuple[int | None, int | None]] = {}
    for line in lines(counted):
        added, removed, name = line.split("\t", 2)
        counts[name] = (
            int(added) if added.isdigit() else None,
            int(removed) if removed.isdigit() else None,
        )
    return [
        FileChange(status[:1], name, *counts.get(name, (None, None)))
        for status, _, name in (line.partition("\t") for line in lines(named))
    ]


async def ignored_paths(where: Path, paths: list[str]) -> set[str]:
    """Which of `paths` the repository's ignore rules cover, tracked or not (`--no-index`):
    an agent that commits `.env` has it tracked on its branch, ignored in the user's
    checkout."""
    if not paths:
        return set()
    stdin = "\0".join(paths).encode() + b"\0"
    out = await git(where, "check-ignore", "--no-index", "-z", "--stdin", ok=(0, 1), stdin=stdin)
    return set(lines(out, "\0"))


async def review(tree: Worktree) -> Review:
    """The worktree against `base_sha`: its commits, the files changed (tracked and
    new), and one diff of the working tree against the base (so uncommitted edits show
    with the committed ones)."""
    path, base = tree.path, tree.base_sha
    if not is_folder(path):
        raise GitRefused(f"{path} is gone: the worktree was discarded")
    head = (await git(path, "rev-parse", "HEAD")).strip()
    log = await git(path, "log", "--format=%h%x09%s", f"{base}..HEAD")
    commits = tuple((sha, subject) for sha, _, subject in (c.partition("\t") for c in lines(log)))
    files = await numstat(path, base)
    untracked = lines(await git(path, "ls-files", "--others", "--exclude-standard"))
    files += [FileChange("?", name) for name in untracked]
    ignored = await ignored_paths(path, [f.path for f in files if f.status in ("A", "?")])
    files = [
        FileChange(f.status, f.path, f.added, f.removed, ignored=True) if f.path in ignored else f
        for f in files
    ]
    parts = [await git(path, "diff", "--no-color", "--no-renames", base)]
    for name in untracked[:MAX_UNTRACKED]:
        # --no-index exits 1 when the files differ, which a new file always does.
        parts.append(
            await git(path, "diff", "--no-color", "--no-index", "--", "/dev/null", name, ok=(0, 1))
        )
    if len(untracked) > MAX_UNTRACKED:
        parts.append(f"… {len(untracked) - MAX_UNTRACKED} more new files, listed above\n")
    diff = "".join(parts)
    truncated = len(diff) > MAX_DIFF_BYTES
    if truncated:
        cut = diff.rfind("\n", 0, MAX_DIFF_BYTES)
        diff = diff[: cut + 1 if cut >= 0 else MAX_DIFF_BYTES]
    status = await git(path, "status", "--porcelain", "--untracked-files=normal")
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
