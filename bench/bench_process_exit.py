"""How fast the supervisor learns that a child died, and what the obvious way risks.

Run: .venv/bin/python bench/bench_process_exit.py

- SIGKILL → exit known: our pidfd watcher (`ChildProcess.wait`) against asyncio's own
  `await Process.wait()` (3.11's thread-per-child watcher), same children, same run.
- The gh-119710 case: the child exits while a grandchild keeps its stdout pipe open.
  pidfd: exit known at once; `Process.wait()`: still blocked when we give up (bounded).
- spawn cost: `spawn_child` (setpriv --pdeathsig prefix, log file) against a bare
  `create_subprocess_exec` of the same command.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibration import calibrated

from legion_tui.supervisor.processes.process import marker_env, spawn_child
from legion_tui.supervisor.processes.sweep import sweep

ROUNDS = 25
RUN_ID = f"bench-exit-{os.getpid()}"  # run ids are kill targets: never share one
HANG_BOUND = 2.0
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
GRANDPARENT = [
    sys.executable,
    "-c",
    "import subprocess, sys; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
    "sys.exit(0)",
]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-exit-"))
    env = marker_env(
        run_id=RUN_ID,
        node_id="n",
        socket_path=tmp / "s",
        run_dir=tmp,
        session_file=tmp / "n.jsonl",
    )
    pidfd_ms: list[float] = []
    wait_ms: list[float] = []
    spawn_ours: list[float] = []
    spawn_bare: list[float] = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        child = await spawn_child(SLEEPER, env=env, cwd=tmp, log_path=tmp / "n.log")
        spawn_ours.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        os.kill(child.pid, signal.SIGKILL)
        await child.wait(5.0)
        pidfd_ms.append((time.perf_counter() - t0) * 1000)
        await child.aclose()

        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *SLEEPER, stdout=asyncio.subprocess.DEVNULL, start_new_session=True
        )
        spawn_bare.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        proc.kill()
        await asyncio.wait_for(proc.wait(), 5.0)
        wait_ms.append((time.perf_counter() - t0) * 1000)

    print(f"exit_known_pidfd_median: {statistics.median(pidfd_ms):.2f} ms")
    print(f"exit_known_pidfd_p95: {p95(pidfd_ms):.2f} ms")
    print(f"exit_known_process_wait_median: {statistics.median(wait_ms):.2f} ms")
    print(f"exit_known_process_wait_p95: {p95(wait_ms):.2f} ms")
    print(f"spawn_child_median: {statistics.median(spawn_ours):.2f} ms")
    print(f"spawn_bare_create_subprocess_median: {statistics.median(spawn_bare):.2f} ms")

    # A grandchild holds the pipe: pidfd vs Process.wait().
    child = await spawn_child(GRANDPARENT, env=env, cwd=tmp, log_path=tmp / "g.log", pipes=True)
    t0 = time.perf_counter()
    code = await child.wait(HANG_BOUND)
    print(f"grandchild_holds_pipe_pidfd: {(time.perf_counter() - t0) * 1000:.1f} ms (code {code})")
    await sweep(root_pid=None, pgid=child.pgid, run_id=RUN_ID, node_ids={"n"}, force=True)
    await child.aclose()
    proc = await asyncio.create_subprocess_exec(
        *GRANDPARENT, stdout=asyncio.subprocess.PIPE, start_new_session=True, env=env
    )
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(proc.wait(), HANG_BOUND)
        outcome = "returned"
    except TimeoutError:
        outcome = "still blocked, gave up"
    waited = (time.perf_counter() - t0) * 1000
    print(f"grandchild_holds_pipe_process_wait: {waited:.1f} ms ({outcome})")
    os.killpg(proc.pid, signal.SIGKILL)
    await sweep(root_pid=None, pgid=None, run_id=RUN_ID, node_ids={"n"}, force=True)
    # The pipe is closed now that the grandchild is dead: the wait can finish.
    await asyncio.wait_for(proc.wait(), 5.0)


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
