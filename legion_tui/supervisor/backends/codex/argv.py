"""How `codex app-server` is started for a node: its argv, the approval policy the card
asks for, where its rollout (session file) is, and what its log says when it will not
start (`codex.handle` for the protocol)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.common import log_tail, resolve_argv

__all__ = [
    "APPROVAL_POLICY",
    "SANDBOX",
    "approval_policy",
    "codex_argv",
    "codex_home",
    "log_words",
    "rollout_of",
    "rollout_thread_id",
]

SANDBOX = "workspace-write"
APPROVAL_POLICY = "never"
_THREAD_IN_NAME = re.compile(
    r"rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)
_FRAME = re.compile(r"\d+: (<unknown>|at .*|0x[0-9a-f]+ .*)$")  # a Rust backtrace frame


def codex_argv(spec: LaunchSpec) -> list[str]:
    """The card's argv (or `codex`) with `app-server` appended unless it is there."""
    argv = resolve_argv(spec.command or ["codex"], spec)
    if "app-server" not in argv:
        argv.append("app-server")
    return argv


def approval_policy(argv: list[str], permissions: str | None = None) -> tuple[str, list[str]]:
    """The approval policy — the card's `-c approval_policy=…` (TOML: quotes allowed),
    over `permissions` (`ask`: `untrusted`, any other: `never`), else `never` — and the
    argv without it: the policy goes in `thread/start`, as Codex 0.169 refuses
    `untrusted` in its config ("no longer supported") yet takes it there."""
    policy = "untrusted" if permissions == "ask" else APPROVAL_POLICY
    kept: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        key, _eq, value = (argv[index + 1] if index + 1 < len(argv) else "").partition("=")
        if arg in ("-c", "--config") and key.strip() == "approval_policy":
            policy = value.strip().strip("'\"") or policy
            index += 2
            continue
        kept.append(arg)
        index += 1
    return policy, kept


def rollout_thread_id(path: Path) -> str | None:
    """The thread id a rollout file is named after (`rollout-<time>-<thread>.jsonl`),
    following the node's session link; None when it names none."""
    found = _THREAD_IN_NAME.search(os.path.realpath(path))
    return found.group(1) if found else None


def _codex_home(env: dict[str, str]) -> Path:
    home = env.get("CODEX_HOME")
    if home:
        return Path(home)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


def codex_home(env: dict[str, str]) -> Path:
    home = env.get("CODEX_HOME")
    if home:
        return Path(home)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


def rollout_of(env: dict[str, str], thread_id: str) -> Path | None:
    """The newest rollout file of `thread_id` under the sessions of `env`'s Codex home."""
    sessions = codex_home(env) / "sessions"
    found = sorted(sessions.glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return found[-1] if found else None


def log_words(spec: LaunchSpec, *, max_lines: int = 6) -> str:
    """The last lines of Codex's log that say something: a refused start prints its
    reason (`Error: Model provider … not found`) and then a Rust stack backtrace of
    `N: <unknown>` frames, which would push the reason out of `log_tail`'s last lines."""
    lines = log_tail(spec, max_lines=64).split(" ⏎ ")
    kept = [ln for ln in lines if ln and ln != "Stack backtrace:" and not _FRAME.match(ln)]
    return " ⏎ ".join(kept[-max_lines:])
