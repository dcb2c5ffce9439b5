"""Running the dashboard from the CLI (`legion tui`, `legion run`, `legion tui --view`):
inside the event loop the supervisor shares, with the GC tuned for frame time, and the
session's name and the way back to it said on the user's screen after it ends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from legion_tui import receipts
from legion_tui.commands.invocation import legion_command
from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.dashboard.terminal import say_after_exit
from legion_tui.ops import Operations
from legion_tui.state import LegionModel
from legion_tui.themes import DEFAULT_THEME

__all__ = ["run_dashboard_async"]


async def run_dashboard_async(
    model: LegionModel,
    ops: Operations,
    *,
    theme: str = DEFAULT_THEME,
    run_dir: Path | None = None,
    on_start: Callable[[LegionApp], Awaitable[None]] | None = None,
    app_ready: Callable[[LegionApp], None] | None = None,
    hosts: bool = True,
) -> int:
    """Run the dashboard until the user quits, inside the running event loop (the
    supervisor shares the loop), with the GC tuned for frame time. `app_ready` gets the
    app before it runs (the host routes its signals to it). Returns the app's return
    code: 1 when the dashboard died of an error (Textual has printed it by then)."""
    app = make_app(
        model, ops, theme=theme, run_dir=run_dir, on_start=on_start, gc_tuning=True, hosts=hosts
    )
    if app_ready is not None:
        app_ready(app)
    await app.run_async()
    if hosts:  # back on the user's screen: the session's name and the way back to it
        say_after_exit(receipts.reopen_hint(model.session_name, legion_command()))
    return app.return_code or 0
