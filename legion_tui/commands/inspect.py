"""`legion inspect FILE [--json]`: what the session parser makes of one session file —
pi's, Claude Code's or Codex's (told apart by the file's first line)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from legion_tui.commands import Command


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", help="a session file (.jsonl) of pi, Claude Code or Codex"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _run(args: argparse.Namespace) -> int:
    from legion_tui.session.reader import read_session
    from legion_tui.session.report import progress_as_dict, progress_as_text

    progress = read_session(args.file)
    if progress.unreadable is not None:
        reason = {"ENOENT": "no such file", "deleted": "no such file"}.get(
            progress.unreadable, progress.unreadable
        )
        print(f"legion inspect: cannot read {args.file}: {reason}", file=sys.stderr)
        return 1
    if args.json:
        data: dict[str, Any] = progress_as_dict(progress)
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(progress_as_text(progress, args.file))
    return 0


COMMANDS: dict[str, Command] = {
    "inspect": Command(
        help="Show what the session parser derives from one session file (pi, Claude Code, "
        "Codex).",
        add_arguments=_add_arguments,
        run=_run,
    ),
}
