"""How Claude Code is started for a node: its argv (the card's command plus the
stream-json flags it did not give), the tool names it knows, and where its session file
is (`claude.handle` for the protocol; notes/agent-clis.md §1.3–1.9)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.common import has_option, option_value, resolve_argv

__all__ = ["CLAUDE_TOOL_NAMES", "claude_argv", "claude_session_file", "claude_tools", "resume_id"]

# pi's lowercase tool names (the bundled cards) → Claude Code's. Grep, Glob and LS are
# gone from 2.1.328 (its Bash searches); allowing a tool it lacks is a rule that never
# matches, not an error.
CLAUDE_TOOL_NAMES: dict[str, str] = {
    "read": "Read",
    "bash": "Bash",
    "edit": "Edit",
    "write": "Write",
    "grep": "Grep",
    "find": "Glob",
    "ls": "LS",
}
_SLUG = re.compile(r"[^A-Za-z0-9]")


def claude_tools(tools: Sequence[str]) -> list[str]:
    """A card's tool names as Claude's (names it already spells pass through)."""
    return [CLAUDE_TOOL_NAMES.get(name, name) for name in tools]


def claude_argv(spec: LaunchSpec, session_id: str, *, resume: bool) -> list[str]:
    """The card's command (or `claude`) plus the flags it did not give (module doc).

    Adds a permission bypass only for `permissions: never-ask`: otherwise tools run as
    the card's `tools` allow them, and another is asked of the user (`ask`, the default)
    or denied unasked (`allowed-tools`).
    """
    argv = resolve_argv(spec.command or ["claude"], spec)
    if not has_option(argv, "-p", "--print"):
        argv.append("-p")
    if not has_option(argv, "--input-format"):
        argv += ["--input-format", "stream-json"]
    if not has_option(argv, "--output-format"):
        argv += ["--output-format", "stream-json"]
    for flag in ("--verbose", "--include-partial-messages", "--replay-user-messages"):
        if flag not in argv:
            argv.append(flag)
    if not has_option(argv, "--session-id", "--resume", "-r", "--continue", "-c"):
        argv += ["--resume", session_id] if resume else ["--session-id", session_id]
    if spec.system_prompt and not has_option(argv, "--system-prompt", "--append-system-prompt"):
        # One `--opt=value` word: a card body starting with "-" must not read as a flag.
        argv.append(f"--append-system-prompt={spec.system_prompt}")
    if spec.tools and not has_option(argv, "--allowedTools", "--allowed-tools"):
        # One comma-separated word: the option takes a variadic list.
        argv.append(f"--allowedTools={','.join(claude_tools(spec.tools))}")
    if spec.permissions == "never-ask" and not has_option(argv, "--permission-mode"):
        argv += ["--permission-mode", "bypassPermissions"]
    bypass = "--dangerously-skip-permissions" in argv or option_value(
        argv, "--permission-mode"
    ) == "bypassPermissions"
    asks = spec.permissions != "allowed-tools"
    if asks and not bypass and not has_option(argv, "--permission-prompt-tool"):
        # A tool the rules neither allow nor deny is asked of us on stdout (a
        # `can_use_tool` control request) instead of denied unseen: the node is BLOCKED
        # until the user answers (`asking`); without it `-p` denies it silently. A card
        # that bypasses permissions is never asked anything.
        argv.append("--permission-prompt-tool=stdio")
    return argv


def claude_session_file(env: dict[str, str], cwd: Path, session_id: str) -> Path:
    """Where Claude Code run with `env` in `cwd` writes session `session_id`."""
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".claude"
    )
    # Claude names the folder after its working directory as the kernel reports it.
    slug = _SLUG.sub("-", os.path.realpath(cwd))
    return Path(config) / "projects" / slug / f"{session_id}.jsonl"


def resume_id(link: Path) -> str | None:
    """The session a resume continues: the stem of the file the node's link points at."""
    try:
        target = Path(os.path.realpath(link))
    except OSError:
        return None
    if not target.is_file() or target == link.absolute():
        return None  # no link (a real file of another kind) or nothing to continue
    stem = target.stem
    try:
        uuid.UUID(stem)
    except ValueError:
        return None
    return stem
