"""The stop sweep: what it catches that a group kill misses, and what it costs.

Run: .venv/bin/python bench/bench_process_sweep.py

- An agent with (a) a plain child, (b) a start_new_session child, (c) a double-forked
  setsid daemon, (d) a child ignoring SIGTERM. The obvious stop — `killpg(SIGTERM)`,
  grace, `killpg(SIGKILL)` (honcho's way) — against our sweep: survivors and duration.
- The marker scan (`/proc/*/environ` read directly) against `psutil.process_iter`
  with `environ()`, over every process of the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from calibration import calibrated
from process_helpers import TREE_AGENT, marked, until

from legion_tui.supervisor.processes.child_process import ChildProcess
from legion_tui.supervisor.processes.process import marker_env, spawn_child
from legion_tui.supervisor.processes.sweep import marked_pids, sweep

GRACE = 1.0
SCANS = 30


async def spawn_tree(tmp: Path, run_id: str) -> ChildProcess:
    script = tmp / "tree.py"
    script.write_text(TREE_AGENT)
    ready = tmp / f"{run_id}.ready"
    env = marker_env(
        run_id=run_id,
        node_id="n",
        socket_path=tmp / "s",
        run_dir=tmp,
        session_file=tmp / "n.jsonl",
    )
    child = await spawn_child(
        [sys.executable, str(script), str(ready)], env=env, cwd=tmp, log_path=tmp / "n.log"
    )
    await until(ready.exists, bound=20.0)
    return child


async def naive_stop(child: ChildProcess) -> None:
    os.killpg(child.pgid, signal.SIGTERM)
    await child.wait(GRACE)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pgid, signal.SIGKILL)
    await child.wait(2.0)


def psutil_scan(run_id: str) -> list[int]:
    want = ("LEGION_RUN_ID", run_id)
    found = []
    for proc in psutil.process_iter():
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        if env.get(want[0]) == want[1] and env.get("LEGION_NODE_ID") == "n":
            found.append(proc.pid)
    return found


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))

    naive = f"naive-{os.getpid()}"  # run ids are kill targets: never share one
    child = await spawn_tree(tmp, naive)
    before = len(marked(naive))
    t0 = time.perf_counter()
    await naive_stop(child)
    naive_s = time.perf_counter() - t0
    await asyncio.sleep(0.2)  # let the group's deaths land before counting
    naive_left = len(marked(naive))
    print(f"tree_processes: {before} processes")
    print(f"naive_killpg_stop_survivors: {naive_left} processes")
    print(f"naive_killpg_stop_duration: {naive_s * 1000:.0f} ms")
    # The scan below doubles as the cost of the scan with survivors around.
    ours, theirs = [], []
    for _ in range(SCANS):
        t0 = time.perf_counter()
        a = marked_pids(naive, {"n"})
        ours.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        b = psutil_scan(naive)
        theirs.append((time.perf_counter() - t0) * 1000)
        assert sorted(a) == sorted(b), (a, b)
    print(f"processes_on_machine: {len(psutil.pids())} processes")
    print(f"marker_scan_proc_environ_median: {statistics.median(ours):.2f} ms")
    print(f"marker_scan_psutil_process_iter_median: {statistics.median(theirs):.2f} ms")
    report = await sweep(root_pid=None, pgid=None, run_id=naive, node_ids={"n"}, force=True)
    print(f"cleanup_sweep_after_naive_survivors: {len(report.survivors)} processes")
    await child.aclose()

    for force in (False, True):
        run_id = f"sweep-{force}-{os.getpid()}"
        child = await spawn_tree(tmp, run_id)
        t0 = time.perf_counter()
        report = await sweep(
            root_pid=child.pid,
            pgid=child.pgid,
            run_id=run_id,
            node_ids={"n"},
            force=force,
            grace=GRACE,
            root_exit=child.exited_future(),
        )
        elapsed = time.perf_counter() - t0
        label = "force" if force else "graceful"
        print(f"sweep_{label}_survivors: {len(report.survivors)} processes")
        print(f"sweep_{label}_left_by_scan: {len(marked(run_id))} processes")
        print(f"sweep_{label}_duration: {elapsed * 1000:.0f} ms (grace {GRACE:g} s)")
        await child.aclose()


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
