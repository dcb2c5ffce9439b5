"""`legion`: the front door. Each command lives in `legion_tui.commands.<module>`.

A command module exposes `COMMANDS: dict[str, Command]`; modules import their heavy
dependencies (Textual, numpy, the supervisor) inside `run`, so `legion status` stays fast.
`legion VERB ...` imports VERB's module alone and builds VERB's parser alone (agents call
the control verbs in loops: their start-up is most of their wall time, SPEC §8); `legion`
with no known verb builds them all, for the help and the usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from legion_tui import __version__
from legion_tui.commands import Command

# Where each command lives, in the help's order (tests/test_import_fences.py holds this
# table to the modules' own COMMANDS).
_AGENT = "legion_tui.commands.agent"
_RUN = "legion_tui.commands.run"
_TEAM = "legion_tui.commands.team"
COMMAND_HOMES: dict[str, str] = {
    "inspect": "legion_tui.commands.inspect",
    "doctor": "legion_tui.commands.doctor",
    **dict.fromkeys(
        ("spawn", "wait", "collect", "stop", "abort", "steer", "resume", "status", "tree"),
        _AGENT,
    ),
    **dict.fromkeys(("run", "demo", "tui"), _RUN),
    **dict.fromkeys(("mail", "phase"), _TEAM),
    **dict.fromkeys(("diff", "commit", "land", "discard", "gc"), "legion_tui.commands.work"),
    "serve": "legion_tui.commands.serve",
    "budget": "legion_tui.commands.budget",
}
# One module per command group; each adds its own subcommands.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMAND_HOMES.values()))


def _terminal_columns() -> int:
    """`shutil.get_terminal_size().columns` without importing shutil (and with it zlib,
    bz2 and lzma: ~2.5 ms of every verb, SPEC §8): $COLUMNS, else stdout's terminal,
    else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's own, but its width found without shutil: argparse builds one for
    every `add_argument` (to check the metavar), not only to print a help."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep that, but print the help hint.
    Every parser (the verbs' too: argparse makes them of this class) formats with
    `_HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser(
    verb: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    """The parser of every command, or of `verb` alone when it names one."""
    wanted = (verb,) if verb in COMMAND_HOMES else tuple(COMMAND_HOMES)
    parser = _Parser(
        prog="legion",
        description="Run and watch a tree of AI coding agents from a terminal.",
    )
    parser.add_argument("--version", action="version", version=f"legion {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands: dict[str, Command] = {}
    for name in wanted:
        command = importlib.import_module(COMMAND_HOMES[name]).COMMANDS[name]
        command.add_arguments(
            sub.add_parser(name, help=command.help, description=command.help)
        )
        commands[name] = command
    return parser, commands


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            return _dispatch(sys.argv[1:] if argv is None else list(argv))
        finally:
            sys.stdout.flush()  # here, where a reader gone away can be caught (not at exit)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `legion status | head -1`: the reader has what it wanted. No traceback, and
        # what is left unwritten goes nowhere (Python would flush it again at exit);
        # 141 is what a shell reports for a tool the closed pipe stopped.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _dispatch(argv: list[str]) -> int:
    parser, commands = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return commands[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
