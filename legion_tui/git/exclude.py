"""Keep `.legion/` out of git (SPEC §6.7): the first run in a repository lists it in
`.git/info/exclude` — local to this clone, never a change to a committed `.gitignore` —
so `git status` stays clean and a `git add -A` never commits the ledger or embeds the
agents' worktrees.

Synchronous and bounded: it runs once, when a run folder is created.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from legion_tui.git.process import tool_env

__all__ = ["exclude_legion"]

_BOUND = 10.0
_NOTE = "# legion-tui: its runs and the agents' worktrees (added by legion; local only)"


def _git(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=project, capture_output=True, text=True, timeout=_BOUND,
        env=tool_env(), stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def exclude_legion(project: Path) -> Path | None:
    """Add `/<prefix>.legion/` to the repository's `info/exclude` unless git already
    ignores `.legion/` there; the file written, or None (not a repository, no git,
    already ignored). Never raises: a repository git cannot read is left alone."""
    if shutil.which("git") is None:
        return None
    try:
        if _git(project, "check-ignore", "-q", ".legion/").returncode == 0:
            return None
        prefix = _git(project, "rev-parse", "--show-prefix")
        common = _git(project, "rev-parse", "--git-common-dir")
    except (OSError, subprocess.SubprocessError):
        return None
    if prefix.returncode != 0 or common.returncode != 0:
        return None
    exclude = Path(common.stdout.strip())
    exclude = (exclude if exclude.is_absolute() else project / exclude) / "info" / "exclude"
    try:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        gap = "" if not text or text.endswith("\n") else "\n"
        with exclude.open("a", encoding="utf-8") as out:
            out.write(f"{gap}{_NOTE}\n/{prefix.stdout.strip()}.legion/\n")
    except OSError:
        return None
    return exclude
