"""`legion serve`: the view dashboard (`legion tui --view`) in a browser, one per page.

Bound to 127.0.0.1 unless `--host` says otherwise; read-only unless `--control`, which
prints a URL carrying a fresh token (legion_tui.dashboard.web).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from legion_tui.commands import Command
from legion_tui.commands.arg_types import session_name

DEFAULT_PORT = 8000


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: use 0-65535 (0: any free one)")
    return port


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, metavar="P", help=f"port ({DEFAULT_PORT})"
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="H",
        help="address to listen on (127.0.0.1: this machine only)",
    )
    p.add_argument(
        "--control",
        action="store_true",
        help="let pages opened with the printed token URL stop, abort, steer and resume",
    )
    p.add_argument(
        "--session",
        metavar="NAME",
        type=session_name,
        help="session to view (default: the newest live run)",
    )


def _serve(args: argparse.Namespace) -> int:
    from legion_tui.dashboard.view import find_view_run
    from legion_tui.runs.catalog import find_project_dir

    found = find_view_run(find_project_dir(Path.cwd()), args.session)
    if isinstance(found, str):
        print(f"legion serve: {found}", file=sys.stderr)
        return 1
    try:
        from legion_tui.dashboard.web import serve
    except ImportError as err:  # textual-serve is a dependency; a broken install says so
        print(f"legion serve: the browser view is not available ({err})", file=sys.stderr)
        return 1

    def announce(line: str) -> None:
        print(line, flush=True)

    try:
        asyncio.run(
            serve(
                found.session_name,
                host=args.host,
                port=args.port,
                control=args.control,
                announce=announce,
            )
        )
    except OSError as err:  # the port is taken, the address is not this machine's
        print(f"legion serve: cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 1
    return 0


COMMANDS: dict[str, Command] = {
    "serve": Command(
        "The live dashboard in a browser: one view per page (read-only unless --control).",
        _serve_args,
        _serve,
    ),
}
