"""Host CPU with 100 idle nodes (SPEC §8: ≤ 2 % of a core).

A real Supervisor launches 100 in-process sim workers at high speed; once every one has
settled (idle, awaiting steer) the host's own CPU time (psutil `cpu_times`, user + system)
is measured over 30 s. Side by side, the obvious alternative: the same idle legion plus a
status refresh that re-parses every session file twice a second (what upstream did
before its stat-gated parsing), measured over 10 s.

    .venv/bin/python bench/bench_supervisor_idle.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import psutil
from calibration import calibrated

from legion_tui.session.reader import read_session
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets, ChildRequest

NODES = 100
IDLE_SECONDS = 30.0
NAIVE_SECONDS = 10.0


def _cpu() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


async def _window(seconds: float) -> float:
    """% of one core used by this process over `seconds` of wall time."""
    c0, w0 = _cpu(), time.perf_counter()
    await asyncio.sleep(seconds)
    return (_cpu() - c0) / (time.perf_counter() - w0) * 100.0


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="lt-bench-") as tmp:
        sup = Supervisor(
            Path(tmp),
            session="idle",
            speed=400.0,
            budgets=Budgets(max_children=NODES, max_active=NODES + 1),
            default_kind="sim",  # the bundled cards say `auto`: measure the sim, explicitly
        )
        await sup.start()
        try:
            t0 = time.perf_counter()
            await sup.launcher.spawn(
                ROOT_ID, [ChildRequest("worker", f"task {i}") for i in range(NODES)]
            )
            await sup.queries.wait_idle_tree()
            print(f"idle_setup_{NODES}_nodes: {time.perf_counter() - t0:.1f} s")
            settled = sum(1 for v in sup.model.nodes.values() if v.node.status.value == "settled")
            print(f"idle_settled_nodes: {settled} nodes")
            await asyncio.sleep(1.5)  # let the last sweep and ledger flush pass
            print(f"idle_host_cpu_{NODES}_nodes: {await _window(IDLE_SECONDS):.2f} % of a core")

            files = [v.node.session_file for v in sup.model.nodes.values() if v.node.session_file]

            async def naive_refresh() -> None:
                while True:
                    for f in files:
                        read_session(f or "")
                    await asyncio.sleep(0.5)

            task = asyncio.create_task(naive_refresh())
            try:
                cpu = await _window(NAIVE_SECONDS)
            finally:
                task.cancel()
            print(f"idle_host_cpu_naive_reparse_500ms: {cpu:.2f} % of a core")
        finally:
            await sup.close()


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
