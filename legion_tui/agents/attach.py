"""Attach (issue 12 item 2): open an agent's own interactive UI on its session.

A node whose agent has a UI of its own — pi, Claude Code, Codex — can be continued by
hand: the dashboard suspends (Textual `App.suspend`), the agent's UI runs in the
terminal on the same session in the node's cwd, and the dashboard comes back when it
exits. The argv:

- pi: `pi --session FILE` — the file the node's session link resolves to (pi's own);
- Claude Code: `claude --resume ID` — the id is the stem of its session file;
- Codex: `codex resume ID` — the thread id its rollout file is named after.

The program is the card's (or `[agent]`'s) as the backends resolve it, with its model
flags kept and the flags that made it a driven session (`--mode rpc`, `-p`, `app-server`,
`--session-dir`, `--continue`) dropped. Only for a node whose legion agent is not
running: two writers on one session would interleave it (the caller stops it first).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from legion_tui.agents.resolve import INSTALL_HINTS
from legion_tui.model import Kind

__all__ = ["AttachPlan", "AttachRefused", "attach_argv", "session_entries"]

# pi flags that take a value / stand alone, dropped from the card's command: they drive
# a session (RPC, print mode) or name another one.
_PI_VALUED = frozenset({"--mode", "--session-dir", "--session", "--fork"})
_PI_ALONE = frozenset({"--continue", "-c", "--no-session", "--print", "-p", "--resume", "-r"})
_CLAUDE_KEPT = frozenset({"--model", "--settings", "--mcp-config", "--add-dir"})
_CODEX_KEPT = frozenset({"-c", "--config", "-m", "--model", "-p", "--profile"})


class AttachRefused(Exception):
    """Why this node cannot be attached to, in words worth showing."""


@dataclass(frozen=True, slots=True)
class AttachPlan:
    """One attach: what runs where, the session it continues, and whether the node's
    own legion agent must be stopped first."""

    name: str  # the node's
    program: str  # as shown: `pi`, `claude`, `codex`
    argv: tuple[str, ...]
    cwd: Path
    session_file: Path  # the agent's own file: its entries are counted before and after
    agent_live: bool  # its control process runs: the attach ends it first (hand-over)
    env: Mapping[str, str] = field(default_factory=dict)  # `[agent.KIND] env`, added
    turn_running: bool = False  # in a turn now: the hand-over asks to abort it first
    give_back: bool = True  # taken back when the UI exits (False: a stopped node stays so)


def _kept(command: Sequence[str], valued: frozenset[str]) -> list[str]:
    """The options of `command` (after its program) whose names are in `valued`, each
    with its value (`--model x` or `--model=x`)."""
    kept: list[str] = []
    args = list(command[1:])
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in valued:
            kept.append(arg)
            if "=" not in arg and i + 1 < len(args):
                kept.append(args[i + 1])
    return kept


def _pi_options(command: Sequence[str]) -> list[str]:
    kept: list[str] = []
    args = list(command[1:])
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _PI_VALUED:
            skip = "=" not in arg
        elif name not in _PI_ALONE and "{" not in arg:  # a placeholder names the task
            kept.append(arg)
    return kept


def attach_argv(
    kind: Kind, name: str, link: Path, command: Sequence[str], cwd: Path, *, path: str | None
) -> tuple[tuple[str, ...], Path]:
    """The UI's argv and the session file it continues, or AttachRefused."""
    from legion_tui.agents.resolve import find_program
    from legion_tui.supervisor.backends.codex.argv import rollout_thread_id

    if kind == "sim":
        raise AttachRefused(f"{name} is a simulated agent: it has no UI of its own to open")
    if kind == "exec":
        raise AttachRefused(
            f"{name} runs a command, not an agent with a UI: its Terminal tab takes keys (i)"
        )
    real = Path(os.path.realpath(link))
    if not real.is_file():
        raise AttachRefused(f"{name} has no session yet: its agent has written nothing")
    program = command[0] if command else kind
    if kind == "pi":
        argv = [program, *_pi_options(command), "--session", str(real)]
    elif kind == "claude":
        argv = [program, *_kept(command, _CLAUDE_KEPT), "--resume", real.stem]
    else:
        thread = rollout_thread_id(link)
        if thread is None:
            raise AttachRefused(f"{name}'s session names no Codex thread: {real.name}")
        argv = [program, *_kept(command, _CODEX_KEPT), "resume", thread]
    found = find_program(program, cwd=cwd, path=path)
    if found is None:
        hint = INSTALL_HINTS.get(kind)
        raise AttachRefused(
            f"cannot attach to {name}: {program!r} is not installed (not on PATH)"
            + (f" — {hint}" if hint else "")
        )
    return (found, *argv[1:]), real


def session_entries(path: Path) -> int:
    """The lines of a session file (each one entry); 0 when it cannot be read."""
    try:
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return 0
