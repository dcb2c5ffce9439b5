"""A card's command placeholders (`{task}`, `{session_file}`, `{cwd}`, `{name}`): which exist
and which one argv part names. Read by the cards' loader and by `[agent] command` in the
settings, so neither imports the other."""

from __future__ import annotations

import re

PLACEHOLDERS: tuple[str, ...] = ("task", "session_file", "cwd", "name")
# `{name}`, but not a shell `${VAR}`: a command may well expand environment variables.
PLACEHOLDER_PATTERN = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders_in(part: str) -> list[str]:
    """The `{name}` placeholders of one argv part (a shell `${VAR}` is not one)."""
    return [str(p) for p in PLACEHOLDER_PATTERN.findall(part)]
