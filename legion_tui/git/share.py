"""Commit an agent's work, push it, open a PR (`c`, `P`; `legion commit`, `legion land
--push --pr`).

A commit takes everything the agent left uncommitted in its worktree (what `git status`
shows there: ignored files stay out). A push sends the agent's branch — or, after a land,
the user's branch — to the user's remote, and what the remote printed is the receipt. A
PR is opened only where `gh` (or `glab`) is installed and logged in, and its URL is the
one the tool printed: never an invented one.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from legion_tui.git.process import GitRefused, git, git_ran, lines, run_tool
from legion_tui.git.worktree import Worktree
from legion_tui.receipts import plural

__all__ = [
    "PUSH_BOUND",
    "Pushed",
    "commit_message",
    "commit_work",
    "open_pr",
    "push",
    "push_for_review",
    "remote_of",
    "subject_of",
    "uncommitted",
    "verdict_note",
]

PUSH_BOUND = 120.0  # a push talks to another machine
FORGE_BOUND = 60.0  # gh / glab: the forge's API
SUBJECT_WIDTH = 72


@dataclass(frozen=True, slots=True)
class Pushed:
    remote: str
    ref: str  # the branch on the remote
    said: str  # what the remote printed (`remote:` lines), empty when it said nothing


def verdict_note(verdict: Any) -> str:
    """`Agent's verdict: ok — reason` from a verdict object (`{"ok": …, "reason": …}`)."""
    if not isinstance(verdict, dict) or not isinstance(verdict.get("ok"), bool):
        return ""
    reason = str(verdict.get("reason") or "").strip()
    said = f"Agent's verdict: {'ok' if verdict['ok'] else 'not ok'}"
    return said + (f" — {reason}" if reason else "")


def subject_of(task: str) -> str:
    """The task's first line, cut to a commit subject's width."""
    first = next((line.strip() for line in task.splitlines() if line.strip()), "agent work")
    return first if len(first) <= SUBJECT_WIDTH else first[: SUBJECT_WIDTH - 1] + "…"


def commit_message(task: str, verdict: Any) -> str:
    """A commit message from the agent's task (subject) and its verdict (body)."""
    body = verdict_note(verdict)
    return subject_of(task) + (f"\n\n{body}\n" if body else "\n")


async def uncommitted(tree: Worktree) -> list[str]:
    """What the agent left uncommitted in its worktree: `git status --porcelain` lines
    (ignored files are not among them, and a commit does not take them)."""
    return lines(await git(tree.path, "status", "--porcelain", "--untracked-files=normal"))


async def commit_work(tree: Worktree, message: str) -> str:
    """`git add -A && git commit` in the agent's worktree; the receipt names the commit."""
    if not message.strip():
        raise GitRefused("the commit message is empty; nothing was committed")
    status = await uncommitted(tree)
    if not status:
        raise GitRefused(f"{tree.branch} has no uncommitted work; nothing was committed")
    await git(tree.path, "add", "-A")
    await git(tree.path, "commit", "--quiet", "--no-edit", "-m", message)
    sha = (await git(tree.path, "rev-parse", "--short", "HEAD")).strip()
    subject = message.strip().splitlines()[0]
    return f"Committed {plural(len(status), 'file')} on {tree.branch} at {sha}: {subject}"


async def remote_of(checkout: Path, branch: str) -> tuple[str, str] | None:
    """(remote, branch there) for `branch`: its upstream, else `origin` or the only
    remote under the same name; None when the repository has no remote."""
    ran = await git_ran(
        checkout, "rev-parse", "--abbrev-ref", "--symbolic-full-name", f"{branch}@{{u}}"
    )
    remotes = lines(await git(checkout, "remote"))
    upstream = ran.out.strip()
    if ran.code == 0 and "/" in upstream:
        for remote in remotes:  # a remote's name may itself hold a slash
            if upstream.startswith(remote + "/"):
                return remote, upstream.removeprefix(remote + "/")
    if "origin" in remotes:
        return "origin", branch
    return (remotes[0], branch) if len(remotes) == 1 else None


async def push(checkout: Path, branch: str, remote: str, ref: str) -> Pushed:
    """`git push REMOTE refs/heads/BRANCH:refs/heads/REF`; a refusal is git's words."""
    ran = await git_ran(
        checkout, "push", "--porcelain", remote, f"refs/heads/{branch}:refs/heads/{ref}"
    )
    if ran.code != 0:
        said = "\n".join(part.strip() for part in (ran.err, ran.out) if part.strip())
        raise GitRefused(f"git push {remote}: {said or f'exit {ran.code}'}")
    said = "\n".join(
        line.removeprefix("remote:").strip()
        for line in ran.err.splitlines()
        if line.startswith("remote:") and line.removeprefix("remote:").strip()
    )
    return Pushed(remote, ref, said)


def _forge(checkout_url: str) -> list[str]:
    prefer_glab = "gitlab" in checkout_url.lower()
    tools = ["glab", "gh"] if prefer_glab else ["gh", "glab"]
    return [tool for tool in tools if shutil.which(tool) is not None]


async def open_pr(
    checkout: Path, remote: str, branch: str, base: str, title: str, body: str
) -> str | None:
    """Open a PR/MR of `branch` into `base` with the first logged-in forge tool; the URL
    it printed, or None when no tool is installed and logged in. GitRefused with the
    tool's words when it tried and failed."""
    url = (await git(checkout, "remote", "get-url", remote, ok=(0, 2))).strip()
    for tool in _forge(url):
        auth = await run_tool([tool, "auth", "status"], checkout, FORGE_BOUND)
        if auth.code != 0:
            continue
        if tool == "gh":
            argv = ["gh", "pr", "create", "--head", branch, "--base", base,
                    "--title", title, "--body", body]  # fmt: skip
        else:
            argv = ["glab", "mr", "create", "--source-branch", branch, "--target-branch", base,
                    "--title", title, "--description", body, "--yes"]  # fmt: skip
        ran = await run_tool(argv, checkout, FORGE_BOUND)
        if ran.code != 0:
            said = ran.err.strip() or ran.out.strip() or f"exit {ran.code}"
            raise GitRefused(f"{tool} could not open the PR: {said}")
        printed = [w for w in ran.out.split() if w.startswith(("https://", "http://"))]
        return printed[-1] if printed else None
    return None


async def push_for_review(
    checkout: Path, branch: str, remote: tuple[str, str], base: str, task: str, verdict: Any
) -> tuple[Pushed, str | None]:
    """Push the agent's branch and open a PR of it into `base` — its title the task's
    first line, its body the verdict; (what the push said, the PR's URL if one opened)."""
    pushed = await push(checkout, branch, *remote)
    title = subject_of(task or branch)
    body = verdict_note(verdict) or f"The work of {branch}."
    return pushed, await open_pr(checkout, pushed.remote, pushed.ref, base, title, body)
