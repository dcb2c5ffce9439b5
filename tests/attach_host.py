"""Run as a program in a pty by test_app_attach_pty.py: a real host (Supervisor) on the
project in argv[1], one real pi worker spawned with the task in argv[2] and settled,
then the real dashboard (LegionDriver) over it with that worker selected. Prints
nothing of its own: the terminal is the dashboard's (and, attached, pi's)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from real_pi_helpers import settle, spawn_pi
from supervisor_helpers import hosted

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.supervisor.root_ops import RootOperations


async def main(project: Path, task: str) -> int:
    async with hosted(project, default_kind=None) as sup:
        node = await spawn_pi(sup, "worker", task)
        await settle(sup, node.id)

        async def select(app: LegionApp) -> None:
            app.railway.select(node.id)

        app = make_app(sup.model, RootOperations(sup), run_dir=sup.run.dir, on_start=select)
        await app.run_async()
        return app.return_code or 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]), sys.argv[2])))
