"""A short-lived tool (git, gh, glab) run bounded, in its own process group.

git runs hooks, and a hook can hang or fork (an agent can write `.git/hooks` from its
worktree: it is the repository's common dir). Killing git's pid alone left a hook's
children running and the caller waiting on pipes they still held. So each call starts a
new session (its own process group), the wait is bounded, and at the bound — and after a
normal exit too, for anything a hook left behind — the whole group is killed, together
with every descendant seen at that moment (one that left the group with `setsid`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from legion_tui import own_children
from legion_tui.timeouts import within

__all__ = [
    "GIT_TIMEOUT",
    "PLAIN",
    "TIMED_OUT",
    "GitRefused",
    "Ran",
    "git",
    "git_ran",
    "git_words",
    "lines",
    "run_tool",
    "tool_env",
]

GIT_TIMEOUT = 120.0  # a checkout of a big repository takes a while; a hung git does not
TIMED_OUT = 124  # the exit code a call killed at its bound reports (as coreutils' timeout)
_REAP_BOUND = 5.0  # after SIGKILL: the kernel reaps at once; this only guards the wait


class Ran(NamedTuple):
    code: int
    out: str
    err: str


def tool_env(isolated: bool = False, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # Never wait on a credential prompt or an editor; parse git's words in one language.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_EDITOR"] = "true"
    env["LC_ALL"] = "C"
    if isolated:
        # A sandbox the host owns: the user's global and system config (identity,
        # signing, templates with hooks) must neither apply nor be needed.
        env["GIT_CONFIG_GLOBAL"] = os.devnull
        env["GIT_CONFIG_NOSYSTEM"] = "1"
    env.update(extra or {})
    return env


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (psutil; empty when it is gone)."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _kill_group(pgid: int, also: list[int]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    for pid in also:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


async def run_tool(
    argv: list[str],
    cwd: Path,
    bound: float = GIT_TIMEOUT,
    *,
    isolated: bool = False,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> Ran:
    """Run `argv` in `cwd`; (code, stdout, stderr). At `bound` seconds the whole group is
    killed and the code is TIMED_OUT, with a line saying so in stderr."""
    # In a session of its own, so registered: a host's orphan reaper reaps unregistered
    # zombies outside its session, and took git's exit status now and then (255).
    try:
        with own_children.spawning() as register:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=tool_env(isolated, env),
                start_new_session=True,
            )
            register(proc.pid)
    except OSError as err:
        return Ran(127, "", f"{argv[0]}: {err.strerror or err}")
    try:
        return await _finish(proc, argv, bound, stdin)
    finally:
        own_children.forget(proc.pid)


async def _finish(
    proc: asyncio.subprocess.Process, argv: list[str], bound: float, stdin: bytes | None
) -> Ran:
    try:
        out, err_bytes = await within(proc.communicate(stdin), bound)
    except TimeoutError:
        _kill_group(proc.pid, _descendants(proc.pid))
        with contextlib.suppress(TimeoutError):
            await within(proc.wait(), _REAP_BOUND)
        verb = " ".join(word for word in argv[:6] if word not in PLAIN)
        said = f"{verb} did not finish within {bound:g}s (stopped, with its hooks)"
        return Ran(TIMED_OUT, "", said)
    # git is done; a hook's child that closed its pipes may still run in the group.
    _kill_group(proc.pid, [])
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(errors="replace"), err_bytes.decode(errors="replace"))


# Paths as they are (no octal quoting) and no pager, whatever the user's config says.
PLAIN = ("-c", "core.quotePath=false", "--no-pager")


class GitRefused(Exception):
    """git refused or a check failed; `message` says why, in git's words where it spoke."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def git_words(args: tuple[str, ...] | list[str], ran: Ran) -> str:
    """`git VERB ARG: what git said` (stderr, then stdout, where a conflict is told)."""
    said = "\n".join(part.strip() for part in (ran.err, ran.out) if part.strip())
    return f"git {' '.join(args[:2])}: {said or f'exit {ran.code}'}"


async def git(
    cwd: Path,
    *args: str,
    ok: tuple[int, ...] = (0,),
    bound: float = GIT_TIMEOUT,
    stdin: bytes | None = None,
) -> str:
    """git's stdout; GitRefused in git's words when it exits with a code not in `ok`."""
    ran = await run_tool(["git", *PLAIN, *args], cwd, bound, stdin=stdin)
    if ran.code not in ok:
        raise GitRefused(git_words(args, ran))
    return ran.out


async def git_ran(cwd: Path, *args: str, bound: float = GIT_TIMEOUT) -> Ran:
    """git's whole answer, whatever its code (the caller reads it)."""
    return await run_tool(["git", *PLAIN, *args], cwd, bound)


def lines(text: str, sep: str = "\n") -> list[str]:
    return [line for line in text.split(sep) if line]
