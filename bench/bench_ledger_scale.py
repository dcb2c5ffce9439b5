"""Ledger writes a legion makes per agent-second, to set against SQLite's limits (issue 15
item 3: 10 000 agents over 100 machines). Standalone:
`.venv/bin/python bench/bench_ledger_scale.py`.

A real host (`Supervisor`, in-process sims) runs TEAMS simulated teams — a centurion with
its phases, contract, verification, mail and 2–4 members — to the end at SPEED× time.
Afterwards the ledger's rows are counted per table; each node-status event is also one
UPDATE of its node row. Writes per *simulated* agent-second = writes / (agents × wall
seconds × SPEED): the sims' every duration is divided by SPEED, their writes are not.
The figure is then set against `bench_ledger.py`'s measured ceilings on this machine.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from calibration import calibrated

from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets, ChildRequest

TEAMS = 10
SPEED = 20.0
FLEET = 10_000  # the agents issue 15 asks about


async def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        project = Path(d)
        sup = Supervisor(
            project, session="scale", speed=SPEED, default_kind="sim",
            budgets=Budgets(max_depth=3, max_children=16, max_active=200), stop_grace=1.0,
        )  # fmt: skip
        await sup.start()
        began = time.monotonic()
        leads = await sup.launcher.spawn(
            ROOT_ID, [ChildRequest("centurion", f"team {n}", name=f"lead{n}") for n in range(TEAMS)]
        )
        await sup.queries.wait_idle_tree([lead.id for lead in leads])
        wall = time.monotonic() - began
        agents = len(sup.model.nodes) - 1  # root is no agent
        ledger = sup.run.ledger_path
        await sup.close()
        with sqlite3.connect(ledger) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            rows = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
            status_events = db.execute(
                "SELECT count(*) FROM events WHERE type LIKE 'node_%'"
            ).fetchone()[0]
    writes = sum(rows.values()) + status_events
    per_agent_s = writes / (agents * wall * SPEED)
    print(f"teams: {TEAMS}, agents: {agents}, wall: {wall:.1f} s at {SPEED:g}x")
    print("rows: " + ", ".join(f"{t} {n}" for t, n in sorted(rows.items()) if n))
    print(f"node-status updates: {status_events}")
    print(f"writes per agent (whole run): {writes / agents:.1f}")
    print(f"writes per simulated agent-second: {per_agent_s:.4f}")
    print(f"{FLEET} agents: {per_agent_s * FLEET:.0f} writes/s")
    return 0


if __name__ == "__main__":
    with calibrated():
        sys.exit(asyncio.run(main()))
