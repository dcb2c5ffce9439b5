"""`legion demo --headless --nodes 1000 --duration 30`: peak RSS and events handled per
second (SPEC §8: peak RSS ≤ 400 MB); then 10 000 nodes, its peak RSS reported.

Runs the real CLI as a subprocess; the host reports its own `ru_maxrss` and event counts
in the JSON summary, and this script samples the RSS of the host plus every descendant
(the demo's OS-process child included) with psutil. Then the same 1000 nodes at
`--speed 20` for 10 s (how many events the host keeps up with when agents talk fast), and
the obvious alternative to in-process agents side by side: 50 stuck agents in-process vs
50 as OS processes (one `legion-sim` each), memory of the host and its children.

    .venv/bin/python bench/bench_supervisor_demo.py
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from calibration import calibrated

LEGION = str(Path(sys.executable).with_name("legion"))


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a child may exit between the two calls
            total += p.memory_info().rss
    return total


def run_demo(
    nodes: int, duration: float, speed: float = 1.0
) -> tuple[dict[str, object], float, float]:
    # Its output goes to files, not pipes: nothing reads a pipe while the RSS is sampled,
    # and a host that writes more than a pipe holds would block on it.
    with tempfile.TemporaryDirectory(prefix="lt-bench-") as tmp, \
            tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:  # fmt: skip
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [LEGION, "demo", "--headless", "--json", "--nodes", str(nodes),
             "--duration", str(duration), "--speed", str(speed)],
            cwd=tmp, stdout=stdout, stderr=stderr,
        )  # fmt: skip
        proc = psutil.Process(child.pid)
        peak = 0
        while child.poll() is None:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, _tree_rss(proc))
            time.sleep(0.25)
        wall = time.perf_counter() - t0
        stdout.seek(0)
        stderr.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"demo failed ({child.returncode}): {stderr.read().decode()[-2000:]}")
        return json.loads(stdout.read()), peak / 2**20, wall


async def _agents_rss(count: int, isolate: bool) -> float:
    """RSS (MB) of this process + its children with `count` stuck agents running."""
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.wire.names import ROOT_ID
    from legion_tui.wire.spawn_request import Budgets, ChildRequest

    with tempfile.TemporaryDirectory(prefix="lt-bench-") as tmp:
        sup = Supervisor(
            Path(tmp),
            session="mem",
            budgets=Budgets(max_children=count, max_active=count + 1),
            default_kind="sim",  # the bundled cards say `auto`: measure the sim, explicitly
        )
        await sup.start()
        try:
            stuck = {"stall_seconds": 1e9}
            await sup.launcher.spawn(
                ROOT_ID,
                [ChildRequest("worker", "t", sim=stuck, isolate=isolate) for _ in range(count)],
            )
            ready = asyncio.Event()

            def check(_dirty: frozenset[str]) -> None:
                agents = [v for v in sup.model.nodes.values() if v.node.id != ROOT_ID]
                if all(v.progress.in_flight for v in agents):
                    ready.set()

            sup.model.subscribe(check)
            check(frozenset())
            await asyncio.wait_for(ready.wait(), 60)
            return _tree_rss(psutil.Process()) / 2**20
        finally:
            await sup.close()


def main() -> None:
    # 10 000 nodes (issue 16 item 3: reported, no budget): its start-up dominates — ~3.5
    # minutes on a 2-core machine — so it runs for 1 s once started.
    for nodes, duration, speed in ((1000, 30.0, 1.0), (1000, 10.0, 20.0), (10_000, 1.0, 1.0)):
        report, tree_peak_mb, wall = run_demo(nodes, duration, speed)
        tag = f"demo_{nodes}" if speed == 1.0 else f"demo_{nodes}_speed{speed:g}"
        print(f"{tag}_nodes_shown: {report['nodes']} nodes")
        print(f"{tag}_peak_rss_host: {report['peak_rss_mb']} MB")
        print(f"{tag}_peak_rss_host_and_children: {tree_peak_mb:.1f} MB")
        print(f"{tag}_events_per_s: {report['events_per_s']} events/s")
        print(f"{tag}_ledger_events: {report['events_written']} events")
        print(f"{tag}_session_updates: {report['progress_updates']} updates")
        print(f"{tag}_wall_incl_startup_and_pause: {wall:.1f} s")
    base = _tree_rss(psutil.Process()) / 2**20
    inproc = asyncio.run(_agents_rss(50, isolate=False))
    procs = asyncio.run(_agents_rss(50, isolate=True))
    print(f"agents_50_inprocess_rss_delta: {inproc - base:.1f} MB")
    print(f"agents_50_os_processes_rss_delta: {procs - base:.1f} MB")


if __name__ == "__main__":
    with calibrated():
        main()
