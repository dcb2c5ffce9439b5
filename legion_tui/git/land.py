"""Land an agent's branch in the checkout it came from (`L`, `legion land`), without
losing a byte of the user's.

- **What was confirmed, and only that.** The plan names the branch's tip sha; `land`
  lands that sha (never the branch name) and refuses, naming both shas, a branch that
  moved since the confirm: every agent of a run shares the repository's refs.
- **Nothing of the user's is overwritten.** git protects untracked files from a merge but
  not ignored ones: every path the land would write that exists in the checkout as
  untracked or ignored (`.env`, `build/`) is refused by name before anything changes.
- **A dirty checkout lands anyway**: the user's changes are stashed, the branch lands, the
  stash is applied back; a conflict on that keeps the stash and names it.
- **Honest receipts.** git runs bounded, in its own process group (a hanging or forking
  hook is killed whole). Whatever git's exit, the receipt is read back from the
  repository — HEAD, `MERGE_HEAD`, the index — and a half-done land is undone and the
  undo verified.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from legion_tui.git.process import GIT_TIMEOUT, GitRefused, Ran, git, git_ran, git_words, lines
from legion_tui.git.review import FileChange, ignored_paths, numstat
from legion_tui.git.worktree import Worktree, is_folder
from legion_tui.receipts import plural
from legion_tui.settings import LAND_MODES, LandMode

__all__ = ["LandPlan", "Landed", "checkout_of", "holds_changes", "land", "plan_land"]

# In the user's checkout: an operation of their own under way is theirs to finish.
_IN_PROGRESS = {
    "MERGE_HEAD": "a merge",
    "CHERRY_PICK_HEAD": "a cherry-pick",
    "REVERT_HEAD": "a revert",
    "rebase-merge": "a rebase",
    "rebase-apply": "a rebase or am",
}


@dataclass(frozen=True, slots=True)
class LandPlan:
    """What `y` on the land confirm does, read before it is asked."""

    checkout: Path  # the user's checkout the worktree was made from
    branch: str
    head: str  # the branch's tip when planned: the sha that lands
    base: str  # the branch checked out there
    base_head: str
    mode: LandMode
    commits: tuple[tuple[str, str], ...]  # (short sha, subject), newest first
    files: tuple[FileChange, ...]  # what the land writes, with +/-
    dirty: tuple[str, ...]  # the user's changed tracked paths: stashed, landed, restored
    untracked: tuple[str, ...]  # the user's untracked files stashed too (asked for)
    left_behind: bool  # the agent's worktree holds uncommitted work this land does not take
    warnings: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        return self.head[:7]

    @property
    def stashes(self) -> bool:
        return bool(self.dirty or self.untracked)

    def effect(self) -> str:
        """What the land does to the user's checkout, in one phrase."""
        commits = plural(len(self.commits), "commit")
        did = {
            "merge": f"a merge commit on {self.base}",
            "squash": f"one commit on {self.base} (squash of {commits})",
            "rebase": f"{commits} replayed onto {self.base}",
        }[self.mode]
        if self.stashes:
            n = len(self.dirty) + len(self.untracked)
            did += f"; your {plural(n, 'changed file')} stashed and put back"
        return did


@dataclass(frozen=True, slots=True)
class Landed:
    """The receipt of a land that happened, read back from the repository."""

    head: str  # the checkout's HEAD after it
    text: str
    stash_kept: str | None = None  # `stash@{N}` holding the user's changes (a conflict)


# ----- plan -----------------------------------------------------------------------------


async def checkout_of(tree: Worktree) -> Path:
    """The user's checkout `tree` was made from — the repository's main working tree, the
    first `git worktree list` names — asked through the worktree, or through the folders
    that held it once it is gone (`.legion/worktrees`, the project)."""
    near = next(
        (p for p in (tree.path, tree.path.parent, tree.path.parents[2]) if is_folder(p)), None
    )
    if near is None:
        raise GitRefused(f"{tree.path} and the folders that held it are gone")
    for line in lines(await git(near, "worktree", "list", "--porcelain")):
        if line.startswith("worktree "):
            return Path(line.removeprefix("worktree "))
    raise GitRefused(f"git worktree list in {near} names no main checkout")


async def _git_paths(checkout: Path, *names: str) -> list[Path]:
    """Where git keeps each of `names` for this checkout (one `rev-parse` for all)."""
    asked = [word for name in names for word in ("--git-path", name)]
    found = [Path(line) for line in lines(await git(checkout, "rev-parse", *asked))]
    return [path if path.is_absolute() else checkout / path for path in found]


async def _operation_under_way(checkout: Path) -> str | None:
    paths = await _git_paths(checkout, *_IN_PROGRESS)
    return next(
        (what for what, path in zip(_IN_PROGRESS.values(), paths, strict=True) if path.exists()),
        None,
    )


async def _in_the_way(checkout: Path, written: list[str]) -> list[str]:
    """The paths a land writing `written` would overwrite that git does not track in the
    checkout (untracked or ignored), each with which: `.env (ignored)`. A file where the
    branch needs a folder (`build` for `build/out.bin`) is in the way too."""
    tracked = set(lines(await git(checkout, "ls-files", "-z", "--cached"), "\0"))
    seen = _untracked_on_disk(checkout, written, tracked)
    if not seen:
        return []
    ignored = await ignored_paths(checkout, seen)
    return [f"{rel} ({'ignored' if rel in ignored else 'untracked'})" for rel in seen]


def _untracked_on_disk(checkout: Path, written: list[str], tracked: set[str]) -> list[str]:
    """Of `written` and their parent folders, those on disk that git does not track (a
    parent counts when it is a file or a link, where the branch needs a folder)."""
    seen: dict[str, None] = {}
    for path in written:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            rel = "/".join(parts[:depth])
            if rel in tracked or rel in seen:
                continue
            full = checkout / rel
            last = depth == len(parts)
            if os.path.lexists(full) and (last or not full.is_dir() or full.is_symlink()):
                seen[rel] = None
    return list(seen)


async def _hook_warnings(checkout: Path, tree: Worktree) -> list[str]:
    """Hooks (and `core.hooksPath`) changed since the agent's worktree was made: an agent
    can write them from its worktree, and this land runs them in the user's checkout."""
    try:
        made = (tree.path / ".git").stat().st_mtime
    except OSError:
        return []
    said: list[str] = []
    (hooks,) = await _git_paths(checkout, "hooks")
    try:
        changed = sorted(
            entry.name for entry in os.scandir(hooks)
            if not entry.name.endswith(".sample") and entry.stat().st_ctime > made
        )  # fmt: skip
    except OSError:
        changed = []
    if changed:
        said.append(
            f"{', '.join(changed)} in {hooks} changed after {tree.branch} was made: "
            "the land runs them"
        )
    origin = await git(checkout, "config", "--show-origin", "--get", "core.hooksPath", ok=(0, 1))
    source, _, value = origin.strip().partition("\t")
    config = Path(source.removeprefix("file:"))
    config = config if config.is_absolute() else checkout / config
    if value and config.exists() and config.stat().st_ctime > made:
        said.append(f"core.hooksPath is {value} ({config} changed after {tree.branch} was made)")
    return said


async def plan_land(
    tree: Worktree, mode: LandMode = "merge", *, stash_untracked: bool = False
) -> LandPlan:
    """Everything the land confirm names, checked before it is asked: the checkout is on
    a branch with no operation of its own under way, the agent's branch has commits the
    checkout lacks, and nothing the land writes would overwrite a file git does not
    track there."""
    if mode not in LAND_MODES:
        raise GitRefused(f"unknown land mode {mode!r}: one of {', '.join(LAND_MODES)}")
    checkout = await checkout_of(tree)
    # Independent reads run together (each is a process; the refusals keep their order).
    ran, under_way, found, base_head = await asyncio.gather(
        git_ran(checkout, "symbolic-ref", "--quiet", "--short", "HEAD"),
        _operation_under_way(checkout),
        git_ran(
            checkout, "rev-parse", "--verify", "--quiet", f"refs/heads/{tree.branch}^{{commit}}"
        ),
        git(checkout, "rev-parse", "HEAD"),
    )
    base = ran.out.strip()
    if ran.code != 0 or not base:
        raise GitRefused(
            f"{checkout} is not on a branch (detached HEAD): check out the branch "
            f"{tree.branch} should land in; nothing was landed"
        )
    if base == tree.branch:
        raise GitRefused(f"{checkout} has {base} itself checked out; nothing was landed")
    if under_way is not None:
        raise GitRefused(
            f"{checkout} is in the middle of {under_way}: finish or abort it first; "
            "nothing was landed"
        )
    if found.code != 0:
        raise GitRefused(f"{tree.branch} no longer exists in {checkout}; nothing was landed")
    head, base_head = found.out.strip(), base_head.strip()
    log, fork = await asyncio.gather(
        git(checkout, "log", "--format=%h%x09%s", f"{base_head}..{head}"),
        git(checkout, "merge-base", base_head, head, ok=(0, 1)),
    )
    commits = tuple((s, subject) for s, _, subject in (c.partition("\t") for c in lines(log)))
    if not commits:
        raise GitRefused(f"nothing to land: {tree.branch} has no commit that {base} lacks")
    fork = fork.strip()
    if not fork:
        raise GitRefused(f"{tree.branch} shares no history with {base}; nothing was landed")
    if (
        mode == "rebase"
        and (await git(checkout, "rev-list", "--merges", f"{fork}..{head}")).strip()
    ):
        raise GitRefused(
            f"{tree.branch} holds merge commits, which a rebase cannot replay: land it "
            "with mode merge or squash; nothing was landed"
        )
    files = tuple(await numstat(checkout, fork, head))
    blocked = await _in_the_way(checkout, [f.path for f in files if f.status != "D"])
    if blocked:
        raise GitRefused(
            f"landing {tree.branch} would overwrite files in {checkout} that git does "
            f"not track: {', '.join(blocked)} — move them aside (or land by hand); "
            "nothing was landed"
        )
    changed, others, left, warnings = await asyncio.gather(
        git(checkout, "status", "--porcelain", "-z", "--untracked-files=no"),
        git(checkout, "ls-files", "-z", "--others", "--exclude-standard")
        if stash_untracked
        else _nothing(),
        git(tree.path, "status", "--porcelain", "--untracked-files=normal")
        if is_folder(tree.path)
        else _nothing(),
        _hook_warnings(checkout, tree),
    )
    return LandPlan(
        checkout=checkout,
        branch=tree.branch,
        head=head,
        base=base,
        base_head=base_head,
        mode=mode,
        commits=commits,
        files=files,
        dirty=tuple(entry[3:] for entry in lines(changed, "\0") if entry[:2].strip()),
        untracked=tuple(lines(others, "\0")),
        left_behind=bool(left.strip()),
        warnings=tuple(warnings),
    )


async def _nothing() -> str:
    return ""


# ----- land -----------------------------------------------------------------------------


def _message(plan: LandPlan) -> str:
    title = f"Land {plan.branch} @ {plan.short}"
    if plan.mode != "squash":
        return title
    listed = "\n".join(f"- {sha} {subject}" for sha, subject in reversed(plan.commits))
    return f"{title} (squash)\n\n{listed}\n"


async def _apply(plan: LandPlan, bound: float) -> Ran:
    """The land itself, in the mode confirmed, of the confirmed sha."""
    at = plan.checkout
    if plan.mode == "merge":
        return await git_ran(
            at, "merge", "--no-ff", "--no-edit", "-m", _message(plan), plan.head, bound=bound
        )
    if plan.mode == "squash":
        ran = await git_ran(at, "merge", "--squash", plan.head, bound=bound)
        if ran.code != 0:
            return ran
        return await git_ran(at, "commit", "--no-edit", "-m", _message(plan), bound=bound)
    fork = (await git(at, "merge-base", plan.base_head, plan.head)).strip()
    return await git_ran(at, "cherry-pick", f"{fork}..{plan.head}", bound=bound)


async def holds_changes(checkout: Path, head: str, sha: str) -> bool:
    """Whether `head` already holds all that `sha` changes: merging it would change
    nothing (true after a merge, a squash or a replay of it)."""
    ran, tree = await asyncio.gather(
        git_ran(checkout, "merge-tree", "--write-tree", head, sha),
        git(checkout, "rev-parse", f"{head}^{{tree}}"),
    )
    return ran.code == 0 and lines(ran.out)[:1] == [tree.strip()]


async def _state(checkout: Path) -> tuple[str, str | None, bool]:
    """(HEAD, the operation left under way, whether the index or tracked files differ
    from HEAD), read from the repository."""
    head, under_way, status = await asyncio.gather(
        git(checkout, "rev-parse", "HEAD"),
        _operation_under_way(checkout),
        git(checkout, "status", "--porcelain", "--untracked-files=no"),
    )
    return head.strip(), under_way, bool(status.strip())


async def _settled_state(checkout: Path, before: str) -> tuple[str, str | None, bool]:
    """The state after the land's git call. git runs `post-merge` after the merge commit
    and before it removes `MERGE_HEAD`: a hook killed at the bound leaves a finished merge
    that still looks under way. When HEAD is a new commit whose parents hold MERGE_HEAD,
    the merge is done and only its bookkeeping is left: `git merge --quit` forgets it."""
    head, under_way, differs = await _state(checkout)
    if under_way == _IN_PROGRESS["MERGE_HEAD"] and head != before:
        pending = (await git(checkout, "rev-parse", "--verify", "MERGE_HEAD")).strip()
        parents = lines(await git(checkout, "rev-parse", f"{head}^@"))
        if pending in parents:
            await git(checkout, "merge", "--quit")
            head, under_way, differs = await _state(checkout)
    return head, under_way, differs


async def _undo(plan: LandPlan, before: str) -> tuple[bool, str]:
    """Put the checkout back at `before` and verify it: (whether it is as it was, the
    words saying so). The user's own changes are in the stash (or there were none), so
    resetting tracked files loses nothing of theirs."""
    at = plan.checkout
    merging, picking = await _git_paths(at, "MERGE_HEAD", "CHERRY_PICK_HEAD")
    for path, verb in ((merging, "merge"), (picking, "cherry-pick")):
        if path.exists():
            await git_ran(at, verb, "--abort")
    head, under_way, differs = await _state(at)
    if head != before or under_way or differs:
        await git_ran(at, "reset", "--hard", "--quiet", before)
        head, under_way, differs = await _state(at)
    if head == before and under_way is None and not differs:
        return (
            True,
            f"undone: {plan.base} is at {before[:7]} as it was (HEAD, index and files checked)",
        )
    return False, (
        f"could NOT be undone: HEAD is {head[:7]} (was {before[:7]})"
        + (f", {under_way} is under way" if under_way else "")
        + (", tracked files differ from HEAD" if differs else "")
        + f" — see `git -C {at} status`"
    )


async def _stash(plan: LandPlan) -> str | None:
    """Stash the user's changes; the stash's sha (None: there was nothing to stash)."""
    at = plan.checkout
    old = (await git(at, "rev-parse", "--quiet", "--verify", "refs/stash", ok=(0, 1))).strip()
    args = [
        "stash",
        "push",
        "--quiet",
        "-m",
        f"legion: your changes before landing {plan.branch} @ {plan.short}",
    ]
    if plan.untracked:
        args.append("--include-untracked")
    await git(at, *args)
    new = (await git(at, "rev-parse", "--quiet", "--verify", "refs/stash", ok=(0, 1))).strip()
    return new if new and new != old else None


async def _stash_ref(checkout: Path, sha: str) -> str:
    for entry in lines(await git(checkout, "stash", "list", "--format=%gd%x09%H")):
        ref, _, full = entry.partition("\t")
        if full == sha:
            return ref
    return sha[:7]


async def _restore(plan: LandPlan, stash: str) -> str | None:
    """Apply the stash back; None when the user's changes are back, else the stash entry
    kept (the checkout's tracked files left at HEAD, nothing half-applied)."""
    at = plan.checkout
    applied = await git_ran(at, "stash", "apply", "--quiet", stash)
    if applied.code == 0:
        ref = await _stash_ref(at, stash)
        await git_ran(at, "stash", "drop", "--quiet", ref)
        return None
    await git_ran(at, "reset", "--hard", "--quiet", "HEAD")
    return await _stash_ref(at, stash)


async def land(tree: Worktree, confirmed: LandPlan, *, bound: float = GIT_TIMEOUT) -> Landed:
    """Land the sha `confirmed` names, as confirmed; the receipt read back from the
    repository. GitRefused — nothing landed, the checkout as it was (verified), the
    user's changes back or their stash named — when a check fails again or git stops."""
    plan = await plan_land(tree, confirmed.mode, stash_untracked=bool(confirmed.untracked))
    if plan.head != confirmed.head:
        raise GitRefused(
            f"{plan.branch} moved since the confirm: it was {confirmed.short}, it is "
            f"{plan.short} now; nothing was landed (land again to see what it holds now)"
        )
    if (plan.checkout, plan.base) != (confirmed.checkout, confirmed.base):
        raise GitRefused(
            f"{confirmed.checkout} moved from {confirmed.base} to {plan.base} since the "
            "confirm; nothing was landed"
        )
    before = plan.base_head
    stash = await _stash(plan) if plan.stashes else None
    ran = await _apply(plan, bound)
    head, under_way, _differs = await _settled_state(plan.checkout, before)
    landed = (
        head != before and under_way is None and await holds_changes(plan.checkout, head, plan.head)
    )
    if not landed:
        said = git_words(("land", plan.mode), ran) if ran.code != 0 else "git stopped"
        back, undone = await _undo(plan, before)
        kept = None
        if stash:  # put back where the undo held; named where it did not
            kept = await _restore(plan, stash) if back else await _stash_ref(plan.checkout, stash)
        note = f"\nyour changes are kept in {kept} (`git stash pop {kept}`)" if kept else ""
        raise GitRefused(f"{said}\nnothing was landed — {undone}{note}")
    text = (
        f"Landed {plan.branch} @ {plan.short} → {plan.base} at {head[:7]} ({plan.mode}: "
        f"{plural(len(plan.commits), 'commit')}, {plural(len(plan.files), 'file')})."
    )
    if ran.code != 0:
        text += (
            f"\ngit did not finish cleanly after landing it: {git_words(('land', plan.mode), ran)}"
        )
    kept = await _restore(plan, stash) if stash else None
    if stash and kept is None:
        text += " Your changes were stashed and are back."
    elif kept is not None:
        text += (
            f"\nYour changes conflict with what landed: they are kept in {kept} "
            f"({stash[:7] if stash else ''}); `git stash pop {kept}` brings them back to resolve."
        )
    return Landed(head=head, text=text, stash_kept=kept)
