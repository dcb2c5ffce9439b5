"""How the user runs `legion` from their shell, for the commands legion prints.

After `make demo` the command is `.venv/bin/legion` and nothing named `legion` is on
PATH: a hint printed as `legion tui --session …` failed as printed (issue 33). A hint
names the program the way this one was started when `legion` on PATH is not it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["hints_as_typed", "legion_command"]


def legion_command() -> str:
    """`legion` when that is on PATH and is this program (or this program is not the
    `legion` script: `python -m legion_tui.cli`), else the script's own path — relative
    to the working directory when it is below it (`.venv/bin/legion`)."""
    script = Path(sys.argv[0])
    if script.name != "legion" or not script.is_file():
        return "legion"
    found = shutil.which("legion")
    if found is not None and os.path.samefile(found, script):
        return "legion"
    path = script.resolve()
    here = Path.cwd()
    shown = str(path.relative_to(here)) if path.is_relative_to(here) else str(path)
    return shlex.quote(shown if "/" in shown else f"./{shown}")


def hints_as_typed(text: str) -> str:
    """A host's words with each hint in them (`` `legion VERB …` ``, in backticks) naming
    legion as this shell runs it: the host cannot know how the shell that asked calls it."""
    command = legion_command()
    return text if command == "legion" else text.replace("`legion ", f"`{command} ")
