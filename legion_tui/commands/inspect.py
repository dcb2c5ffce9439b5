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


HEAD_BYTES = 8 * 1024 * 1024  # the most of a file read for its first lines


def _first_objects(path: str) -> list[dict[str, Any]]:
    """The JSON objects among the file's first lines (OSError as reading it)."""
    from legion_tui.regular_files import open_regular
    from legion_tui.session.formats import HEAD_LINES

    with open(open_regular(path), "rb") as handle:
        head = handle.read(HEAD_BYTES).split(b"\n")[:HEAD_LINES]
    objects = []
    for line in head:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects


def _run(args: argparse.Namespace) -> int:
    from legion_tui.session.formats import recognise
    from legion_tui.session.reader import read_session
    from legion_tui.session.report import progress_as_dict, progress_as_text

    progress = read_session(args.file)
    if progress.unreadable is not None:
        reason = {"ENOENT": "no such file", "deleted": "no such file"}.get(
            progress.unreadable, progress.unreadable
        )
        print(f"legion inspect: cannot read {args.file}: {reason}", file=sys.stderr)
        return 1
    try:
        refusal = recognise(_first_objects(args.file))
    except OSError as err:  # it went between the two reads
        refusal = f"cannot read it: {err.strerror or err}"
    if refusal is not None:
        print(f"legion inspect: {args.file}: {refusal}", file=sys.stderr)
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
