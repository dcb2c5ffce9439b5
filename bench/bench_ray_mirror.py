"""Session bytes from an agent on a Ray node → the host's model, against a local agent's
append → model; and the host CPU one remote streaming agent costs (issue 15 item 2).

Standalone: `.venv/bin/python bench/bench_ray_mirror.py` (needs legion-tui[ray]).

A local Ray cluster on this machine (`ray.cluster_utils.Cluster`: a head without CPUs and
one worker node): exec agents whose command appends one pi line to `$LEGION_SESSION_FILE`
at a fixed rate and logs `time.monotonic()` just before each write (CLOCK_MONOTONIC is
system-wide, and the node is this machine). The host runs the real `SessionWatcher` on its
run's `sessions/` and logs when `on_change` reports the entry count that includes each
line. Side by side:

- remote: `RayHandle` (the line written on the node, pulled by the long poll, appended to
  the host's mirror, then read by the watcher);
- local: `ExecHandle`, the same command writing straight into the watched folder.

Host CPU per remote agent: this process's CPU time (the loop, Ray's core-worker threads)
while AGENTS remote agents stream, minus the same span with Ray connected and none, / AGENTS.
And what an idle remote agent costs (an exec agent asleep: no byte to mirror, its long
polls only): the host's CPU as above, and its actor's worker process on the node.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_session_latency import _line, _user, pct
from calibration import calibrated

from legion_tui.session.progress import SessionProgress
from legion_tui.session.watcher import SessionWatcher
from legion_tui.settings import ClusterSettings
from legion_tui.supervisor.backend import AgentHandle, LaunchSpec
from legion_tui.supervisor.backends.ray.actor import QUIET_AFTER

LINES = 100  # per agent, latency runs
HZ = 10.0  # lines per second per agent
AGENTS = 8  # remote agents streaming at once for the CPU figure
CPU_SECONDS = 10.0


def write(lines: int, hz: float, log: str) -> None:
    """The agent: a header, then `lines` user lines at `hz`, each write's time logged."""
    path = os.environ["LEGION_SESSION_FILE"]
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-12-02T06:00:00Z",
              "cwd": "/x"}
    with open(path, "ab") as f:
        f.write(_line(header))
    times = []
    next_at = time.monotonic()
    for k in range(lines):
        before = time.monotonic()
        with open(path, "ab") as f:
            f.write(_user(k))
        times.append(before)
        next_at += 1.0 / hz
        time.sleep(max(0.0, next_at - time.monotonic()))
    Path(log).write_text(json.dumps(times))


def _spec(run: Path, node_id: str, lines: int, hz: float) -> LaunchSpec:
    log = run / f"{node_id}.times"
    command = [sys.executable, __file__, "--write", str(lines), str(hz), str(log)]
    return LaunchSpec(
        node_id=node_id, run_id="bench", name=node_id, role="worker", kind="exec", task="",
        session_file=run / "sessions" / f"{node_id}.jsonl", run_dir=run, cwd=run,
        socket_path=run / "none.sock", command=command,
    )  # fmt: skip


class Seen:
    def __init__(self) -> None:
        self.entries: dict[str, list[int]] = {}
        self.times: dict[str, list[float]] = {}

    def __call__(self, node_id: str, progress: SessionProgress) -> None:
        self.entries.setdefault(node_id, []).append(progress.entries)
        self.times.setdefault(node_id, []).append(time.monotonic())

    def latencies(self, node_id: str, written: list[float]) -> list[float]:
        entries, times = self.entries.get(node_id, []), self.times.get(node_id, [])
        out = []
        for k, at in enumerate(written):
            i = bisect.bisect_left(entries, k + 1)  # lines 0..k (the header is no entry)
            if i < len(entries):
                out.append((times[i] - at) * 1000)
        return out


async def _run(handles: list[AgentHandle]) -> None:
    await asyncio.gather(*(h.start() for h in handles))
    await asyncio.gather(*(h.idle() for h in handles))
    await asyncio.gather(*(h.stop(force=True, grace=0.0) for h in handles))


async def latency(label: str, make: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        run = Path(d)
        (run / "sessions").mkdir()
        seen = Seen()
        watcher = SessionWatcher(run / "sessions", seen)
        task = asyncio.create_task(watcher.run())
        await watcher.started.wait()
        await _run([make(_spec(run, "a0", LINES, HZ))])
        await asyncio.sleep(0.5)  # the watcher's last look
        watcher.stop()
        await task
        written = json.loads((run / "a0.times").read_text())
        values = seen.latencies("a0", written)
        print(f"{label} lines: {len(written)} written, {len(values)} seen")
        print(f"{label} p50: {statistics.median(values):.1f} ms")
        print(f"{label} p95: {pct(values, 0.95):.1f} ms")


def _cpu_s(proc: Any) -> float:  # a psutil.Process
    t = proc.cpu_times()
    return float(t.user + t.system)


def _actors_cpu() -> dict[int, float]:
    """CPU seconds of this machine's NodeAgent actor workers, by pid."""
    import psutil

    found = {}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "NodeAgent" in " ".join(proc.info["cmdline"] or []):
                found[proc.pid] = _cpu_s(proc)
        except psutil.Error:
            continue
    return found


async def idle_cost(make: Any) -> None:
    import psutil

    me = psutil.Process()
    start = _cpu_s(me)
    await asyncio.sleep(CPU_SECONDS)
    baseline = _cpu_s(me) - start
    with tempfile.TemporaryDirectory() as d:
        run = Path(d)
        (run / "sessions").mkdir()
        asleep = [dataclasses.replace(_spec(run, f"i{n}", 0, HZ), command=["sleep", "600"])
                  for n in range(AGENTS)]  # fmt: skip
        handles = [make(spec) for spec in asleep]
        await asyncio.gather(*(h.start() for h in handles))
        await asyncio.sleep(QUIET_AFTER + 1.0)  # past the node's first quick looks
        host, actors, began = _cpu_s(me), _actors_cpu(), time.monotonic()
        await asyncio.sleep(CPU_SECONDS)
        span = time.monotonic() - began
        host_s, after = _cpu_s(me) - host, _actors_cpu()
        node_s = sum(after[pid] - actors[pid] for pid in actors if pid in after)
        await asyncio.gather(*(h.stop(force=True, grace=0.0) for h in handles))
    per_host = (host_s - baseline * span / CPU_SECONDS) / AGENTS / span * 100
    print(f"host CPU per idle remote agent: {per_host:.3f} % of a core")
    print(f"its actor's CPU on the node per idle agent: {node_s / AGENTS / span * 100:.2f} % "
          "of a core")


async def host_cpu(make: Any) -> None:
    import psutil

    me = psutil.Process()

    def cpu() -> float:
        return _cpu_s(me)

    start = cpu()
    await asyncio.sleep(CPU_SECONDS)
    idle = cpu() - start
    with tempfile.TemporaryDirectory() as d:
        run = Path(d)
        (run / "sessions").mkdir()
        handles = [make(_spec(run, f"c{n}", int(CPU_SECONDS * HZ), HZ)) for n in range(AGENTS)]
        await asyncio.gather(*(h.start() for h in handles))
        start, began = cpu(), time.monotonic()
        await asyncio.gather(*(h.idle() for h in handles))
        busy, span = cpu() - start, time.monotonic() - began
        await asyncio.gather(*(h.stop(force=True, grace=0.0) for h in handles))
    per_agent = (busy - idle * span / CPU_SECONDS) / AGENTS / span * 100
    print(f"host idle with Ray connected: {idle / CPU_SECONDS * 100:.2f} % of a core")
    print(f"host streaming {AGENTS} remote agents at {HZ:g} lines/s: "
          f"{busy / span * 100:.2f} % of a core")
    print(f"host CPU per remote streaming agent: {per_agent:.2f} % of a core")


async def main() -> int:
    import ray
    from ray.cluster_utils import Cluster

    from legion_tui.supervisor.backends.exec_handle import ExecHandle
    from legion_tui.supervisor.backends.ray.handle import RayHandle

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=AGENTS)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    settings = ClusterSettings(engine="ray", address=cluster.address, num_cpus=1.0)
    try:
        print(f"one agent, {LINES} lines at {HZ:g} lines/s")
        await latency("local exec append → model", ExecHandle)
        await latency("Ray node append → host mirror → model",
                      lambda spec: RayHandle(spec, settings))
        await host_cpu(lambda spec: RayHandle(spec, settings))
        await idle_cost(lambda spec: RayHandle(spec, settings))
    finally:
        ray.shutdown()
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        write(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
        sys.exit(0)
    with calibrated():
        sys.exit(asyncio.run(main()))
