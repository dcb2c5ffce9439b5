"""A card's command placeholders (`{task}`, `{task_file}`, `{session_file}`, `{cwd}`,
`{name}`): which exist, which one argv part names, where one must not be, and the one way
they are filled. Read by the cards' loader and by `[agent] command` in the settings, so
neither imports the other.

A placeholder is replaced in the argv word it stands in, so the task stays one literal
argument whatever it holds. Inside an interpreter's script (`bash -c '…{task}…'`,
`python -c`, `node -e`) it would be substituted into code: a task reading
`x"; touch pwned; "` ran the command (issue 30). Such a card is refused at load; it reads
the task from `$LEGION_TASK` or the file `{task_file}` names instead. Only `{task}` is
text from outside — a user's, or a parent agent's; the others are legion's own values (a
name matches NAME_PATTERN; the paths are the run's and the worktree's) and may be used in
a script.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

PLACEHOLDERS: tuple[str, ...] = ("task", "task_file", "session_file", "cwd", "name")
OUTSIDE_TEXT = frozenset({"task"})  # what a script must never hold (see above)
# `{name}`, but not a shell `${VAR}`: a command may well expand environment variables.
PLACEHOLDER_PATTERN = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
SAFE_WAY = (
    'read the task from "$LEGION_TASK" (or the file {task_file} names), or pass {task} '
    "as an argument of its own after the script (bash -c '…\"$1\"…' _ {task})"
)

# Interpreters that run one of their arguments as code, and the flags that say which.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"})
_SCRIPT_FLAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval"}),
    "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}),
    "php": frozenset({"-r"}),
    "pwsh": frozenset({"-c", "-command", "-Command"}),
    "osascript": frozenset({"-e"}),
}


def placeholders_in(part: str) -> list[str]:
    """The `{name}` placeholders of one argv part (a shell `${VAR}` is not one)."""
    return [str(p) for p in PLACEHOLDER_PATTERN.findall(part)]


def _interpreter(word: str) -> str:
    name = os.path.basename(word)
    return re.sub(r"[0-9.]+$", "", name) or name  # python3.11 → python


def _script_index(argv: Sequence[str], start: int) -> int | None:
    """The index of the script argument of the interpreter at `argv[start]`, if any."""
    name = _interpreter(argv[start])
    for i in range(start + 1, len(argv)):
        word = argv[i]
        if name in _SHELLS:
            # `-c`, or short flags run together that include it (`-ec`, `-lc`).
            if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
                return i + 1 if i + 1 < len(argv) else None
            if not word.startswith("-"):
                return None  # a script file: its arguments are data
        elif word in _SCRIPT_FLAGS.get(name, frozenset()):
            return i + 1 if i + 1 < len(argv) else None
        elif not word.startswith("-"):
            return None
    return None


def placeholders_in_scripts(argv: Sequence[str]) -> list[str]:
    """The `{task}` placeholders inside the script of any interpreter the command names —
    first or behind a wrapper of any shape (`env`, `nice -n 5`, `timeout 60`, `ssh host`)
    and by any path (`/usr/bin/python3.11`)."""
    found: list[str] = []
    for i, word in enumerate(argv):
        name = _interpreter(word)
        if name in _SHELLS or name in _SCRIPT_FLAGS:
            script = _script_index(argv, i)
            if script is not None:
                found += [p for p in placeholders_in(argv[script]) if p in OUTSIDE_TEXT]
    return found


def fill(command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Each known placeholder replaced by its value, in one pass: a value that itself
    holds `{name}` (a task quoting a card) is never filled again."""

    def value(match: re.Match[str]) -> str:
        return values.get(match[1], match[0])

    return [PLACEHOLDER_PATTERN.sub(value, part) for part in command]
