"""`legion`: the front door. Each command lives in `legion_tui.commands.<module>`.

A command module exposes `COMMANDS: dict[str, Command]`; modules import their heavy
dependencies (Textual, numpy, the supervisor) inside `run`, so `legion status` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from legion_tui.commands import Command

# One module per command group; each adds its own subcommands.
COMMAND_MODULES: tuple[str, ...] = (
    "legion_tui.commands.inspect",
    "legion_tui.commands.doctor",
    "legion_tui.commands.agent",
    "legion_tui.commands.run",
    "legion_tui.commands.team",
)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep that, but print the help hint."""


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    parser = _Parser(
        prog="legion",
        description="Run and watch a tree of AI coding agents from a terminal.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands: dict[str, Command] = {}
    for module_name in COMMAND_MODULES:
        module = importlib.import_module(module_name)
        for name, command in module.COMMANDS.items():
            command.add_arguments(
                sub.add_parser(name, help=command.help, description=command.help)
            )
            commands[name] = command
    return parser, commands


def main(argv: Sequence[str] | None = None) -> int:
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return commands[args.command].run(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
