"""Simulated agents in-process against one OS process each (`legion-sim` over RPC).

Run: .venv/bin/python bench/bench_sim_agents.py

Twenty worker sims per mode: time from launch until every agent's session file holds
its first assistant message, memory (supervisor RSS growth, plus the children's RSS in
process mode) and threads (3.11 starts one watcher thread per child). Also the cost of
one abort round trip (turn running → interrupted) in each mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from calibration import calibrated
from process_helpers import launch_spec, until

from legion_tui.supervisor.backend import AgentHandle, LaunchSpec
from legion_tui.supervisor.backends.registry import make_handle

AGENTS = 20
SPEED = 20.0
BEHAVIOUR = {"stall_seconds": 3600}  # keeps every agent inside a turn for the abort test


def has_assistant(path: Path) -> bool:
    try:
        return b'"role":"assistant"' in path.read_bytes()
    except OSError:
        return False


async def run_mode(isolate: bool) -> None:
    label = "process" if isolate else "inprocess"
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-sim-{label}-"))
    me = psutil.Process()
    rss0 = me.memory_info().rss
    threads0 = threading.active_count()
    handles: list[AgentHandle] = []
    t0 = time.perf_counter()
    for i in range(AGENTS):
        spec = launch_spec(
            tmp,
            node_id=f"n{i}",
            isolate=isolate,
            speed=SPEED,
            seed=i,
            sim_behaviour=BEHAVIOUR,
        )
        assert isinstance(spec, LaunchSpec)
        handle = make_handle(spec)
        await handle.start()
        handles.append(handle)
    launched = time.perf_counter() - t0
    files = [tmp / "run" / "sessions" / f"n{i}.jsonl" for i in range(AGENTS)]
    await until(lambda: all(map(has_assistant, files)), bound=30.0, step=0.01)
    first = time.perf_counter() - t0
    rss = me.memory_info().rss - rss0
    children = 0
    for h in handles:
        if h.pid is not None:
            with contextlib.suppress(psutil.Error):
                children += psutil.Process(h.pid).memory_info().rss
    print(f"{label}_launch_{AGENTS}_agents: {launched * 1000:.0f} ms")
    print(f"{label}_all_first_assistant_entry: {first * 1000:.0f} ms")
    print(f"{label}_supervisor_rss_growth: {rss / 2**20:.1f} MiB")
    print(f"{label}_children_rss: {children / 2**20:.1f} MiB")
    print(f"{label}_extra_threads: {threading.active_count() - threads0} threads")

    aborts = []
    for h in handles:
        await until(h.turn_running, bound=30.0, step=0.01)
        t = time.perf_counter()
        result = await h.abort()
        aborts.append((time.perf_counter() - t) * 1000)
        assert result.outcome == "interrupted", result
    print(f"{label}_abort_median: {statistics.median(aborts):.2f} ms")
    t = time.perf_counter()
    reports = await asyncio.gather(*(h.stop(force=False, grace=5.0) for h in handles))
    print(f"{label}_stop_all_graceful: {(time.perf_counter() - t) * 1000:.0f} ms")
    assert all(not r.survivors for r in reports)


async def main() -> None:
    print(f"cpu_count: {os.cpu_count()} cores")
    await run_mode(isolate=False)
    await run_mode(isolate=True)


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
