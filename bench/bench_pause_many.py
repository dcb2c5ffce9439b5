"""The pause of N live agents (issue 35 item 3): the time from a host's close — what
`q` `y`, SIGTERM and a hangup all run — to every agent stopped and recorded.

Run: `.venv/bin/python bench/bench_pause_many.py [N ...]` (default 100 300 1000).

Then a stop of N agents on a host that stays up (item 3's "stop of a 1 000-agent
subtree"): `legion stop lead` of a lead with N live members, and `legion stop all` of
root's N children, each on a fresh host; the processes of the run left after the stop
(must be 0, the lead's own process stopped too) and its retirements in the ledger.

One real host (`Supervisor`, in-process) spawns N exec agents in one batch; each is one
bash process waiting on a pipe that never writes (fork-free: no `sleep` child), so the
machine's process count is the host's, its watchdog and N. Once all N run, `close()` is
timed: the retirements written (one ledger batch), then every agent's stop sweep — the
process group's SIGTERM, the wait for it, and the look for anything of the agent's left
(its run marker in /proc, its session, its cgroup) — all N at once. Then: the processes
of the run still there (must be 0) and the ledger's `interrupted` count (must be N).

The alternative is what the pause did before (issue 35 item 3: each sweep its own pass
over /proc and psutil's `children(recursive=True)`, and an exec terminal's line from
pyte's whole screen): run this script on the commit before the one that added it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from calibration import calibrated

from legion_tui.procfs import environ_of, pids
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets, ChildRequest

WAITER = 'exec 3<> <(:); read -r -u 3'  # blocks on a pipe nobody writes: no child process


def _card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True)
    argv = json.dumps(["bash", "-c", WAITER])
    (agents / "waiter.md").write_text(
        f"---\nname: waiter\ndescription: Waits.\nkind: exec\nrole: worker\ncommand: {argv}\n"
        "---\nWait.\n"
    )
    (agents / "lead.md").write_text(  # a lead whose members the host spawns (its budget)
        f"---\nname: lead\ndescription: Leads.\nkind: exec\nrole: centurion\n"
        f"maxSubagentDepth: 1\ncommand: {argv}\n---\nLead.\n"
    )


def _left(run_id: str) -> int:
    """Processes carrying the run's marker (read as the sweep reads them)."""
    want = f"LEGION_RUN_ID={run_id}".encode()
    return sum(want in (environ_of(pid) or ()) for pid in pids())


def _supervisor(project: Path, n: int, session: str) -> Supervisor:
    """A host for N agents (and a lead) in `project`, its cards written."""
    _card(project)
    budgets = Budgets(max_depth=3, max_children=n, max_active=n + 2)
    return Supervisor(project, session=session, stop_grace=5.0, budgets=budgets)


def _retired(ledger: Path, *reasons: str) -> int:
    """The run's `node_retired` events for one of `reasons`."""
    marks = ", ".join("?" * len(reasons))
    with sqlite3.connect(ledger) as db:
        found = db.execute(
            "SELECT count(*) FROM events WHERE type = 'node_retired' "
            f"AND json_extract(data, '$.reason') IN ({marks})",
            reasons,
        ).fetchone()[0]
    return int(found)


async def pause(n: int) -> tuple[float, float, int, int]:
    """(spawn s, close s, processes left, interrupted in the ledger)."""
    with tempfile.TemporaryDirectory() as d:
        sup = _supervisor(Path(d), n, "pause")
        await sup.start()
        began = time.monotonic()
        batch = [ChildRequest("waiter", "wait", name=f"w{i}") for i in range(n)]
        await sup.launcher.spawn(ROOT_ID, batch)
        spawned = time.monotonic() - began
        run_id, ledger = sup.run.run_id, sup.run.ledger_path
        began = time.monotonic()
        await sup.close()
        closed = time.monotonic() - began
        return spawned, closed, _left(run_id), _retired(ledger, "session-shutdown")


async def stop(n: int, *, under_lead: bool) -> tuple[float, int, int]:
    """(stop s, processes left, `stop` retirements in the ledger): `legion stop lead`
    of a lead with N live members (`under_lead`), or `legion stop all` of root's N."""
    with tempfile.TemporaryDirectory() as d:
        sup = _supervisor(Path(d), n, "stop")
        await sup.start()
        try:
            parent = ROOT_ID
            if under_lead:
                lead_request = ChildRequest("lead", "lead", name="lead")
                (lead,) = await sup.launcher.spawn(ROOT_ID, [lead_request])
                parent = lead.id
            batch = [ChildRequest("waiter", "wait", name=f"w{i}") for i in range(n)]
            await sup.launcher.spawn(parent, batch)
            run_id, ledger = sup.run.run_id, sup.run.ledger_path
            began = time.monotonic()
            await sup.stops.stop(ROOT_ID, "lead" if under_lead else "all")
            took = time.monotonic() - began
            left = _left(run_id)
        finally:
            await sup.close()
        return took, left, _retired(ledger, "stop", "parent-stop")


async def main(sizes: list[int]) -> None:
    for n in sizes:
        spawned, closed, left, interrupted = await pause(n)
        print(f"N={n} spawn of the batch: {spawned:.2f} s")
        print(f"N={n} pause: {closed:.2f} s")
        print(f"N={n} processes left after the pause: {left}; interrupted in the ledger: "
              f"{interrupted}")
        for under_lead, verb in ((True, "stop lead (N members)"), (False, "stop all (N)")):
            took, left, retired = await stop(n, under_lead=under_lead)
            print(f"N={n} {verb}: {took:.2f} s; processes left: {left}; "
                  f"retired in the ledger: {retired}")


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [100, 300, 1000]
    with calibrated():
        asyncio.run(main(sizes))
