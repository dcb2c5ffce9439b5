"""200 simulated agents over two local Ray nodes against 200 all local (issue 15).

Standalone: `.venv/bin/python bench/bench_ray_scale.py [AGENTS] [--node-cpus N]
[--agent-cpus X]` (needs legion-tui[ray]). `--node-cpus 2`: two worker nodes of 2 CPUs
each, as a small real cluster is (issue 35 item 4); without it the nodes have a CPU per
agent. `--agent-cpus`: each agent's ask (`[cluster] numCpus`; default a quarter of a CPU,
eight agents per 2-CPU node — a settled simulated agent keeps its slot, so more than
fit wait for room for good: ask 0.04 for 100 on two such nodes).

One real host (`Supervisor`) per mode spawns AGENTS quick sim workers in one batch, each
a `legion-sim` process (`isolate`: the same program either way):

- local: children of the host, as without `[cluster]`;
- Ray: each in its own Ray actor (`RayHandle`), on a local cluster of a head without CPUs
  and two worker nodes (`ray.cluster_utils.Cluster`) — so every byte of every session
  comes back through the mirror.

Per mode: time from the spawn call until every agent has launched (its `node_launched`
event in the model) and until every one has settled; the host process's CPU over that
span (its loop, the ledger, the watcher; for Ray also the core worker's threads), and
the machine's (all processes: the sims, and for Ray the raylets and the actors); the
ledger's writes (every row, plus the node-row UPDATE behind each node-status event);
and the host's RSS growth. Ratios Ray / local from the same run close it.

The cluster's start is outside both spans. Ray's actors each start a Ray worker process
(tens of MB each), so AGENTS actors want a few GB of memory on top of the sims.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from calibration import calibrated

from legion_tui.model import EventType
from legion_tui.supervisor.core import Supervisor
from legion_tui.wire.names import ROOT_ID
from legion_tui.wire.spawn_request import Budgets, ChildRequest

AGENTS = 200
SPEED = 20.0  # the sims' time scale: a quick worker's turns in about a second
POLL = 0.05  # how often the bench looks at the model (the host's own loop)
LIMIT = 900.0  # the most either phase may take before the bench gives up
# The machine is shared: below this much free memory the bench stops rather than push
# the other processes into the OOM killer (each Ray actor is a worker process).
FLOOR_BYTES = 2 << 30


@dataclass(frozen=True)
class Figures:
    launched_s: float
    settled_s: float
    host_cpu_s: float
    machine_cpu_s: float
    writes: int
    rss_mb: float
    machine_mb: float  # the machine's used memory growth at all-launched
    failed: int  # launches that failed (a Ray actor no worker started within its bound)


def _cpu(times: Any) -> float:  # a process's or the machine's psutil cpu_times()
    return float(times.user + times.system)


def ledger_writes(path: Path) -> int:
    """Rows in every table, plus the node-row UPDATE behind each node-status event."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables)
        status = db.execute("SELECT count(*) FROM events WHERE type LIKE 'node_%'").fetchone()[0]
    return int(rows + status)


async def _until(check: Callable[[], bool], what: str) -> float:
    """Seconds until `check()` holds (polled on the host's own loop), bounded."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > LIMIT:
            raise TimeoutError(f"{what}: not within {LIMIT:g} s")
        if psutil.virtual_memory().available < FLOOR_BYTES:
            raise MemoryError(f"{what}: under {FLOOR_BYTES >> 30} GiB free, stopped")
        await asyncio.sleep(POLL)
    return time.monotonic() - began


async def run_mode(agents: int, cluster: str | None, agent_cpus: float | None = None) -> Figures:
    me = psutil.Process()
    with tempfile.TemporaryDirectory() as d:
        if agent_cpus is not None:
            settings = Path(d) / ".legion" / "settings.toml"
            settings.parent.mkdir()
            settings.write_text(f"[cluster]\nnumCpus = {agent_cpus}\n")
        sup = Supervisor(
            Path(d), session="scale", default_kind="sim", cluster=cluster, stop_grace=1.0,
            speed=SPEED,
            budgets=Budgets(max_depth=2, max_children=agents, max_active=agents + 1),
        )  # fmt: skip
        await sup.start()
        rss, host, machine = me.memory_info().rss, _cpu(me.cpu_times()), _cpu(psutil.cpu_times())
        used = psutil.virtual_memory().used
        began = time.monotonic()
        batch = [
            ChildRequest("worker", f"task {n}", name=f"w{n}", isolate=True, sim={"quick": True})
            for n in range(agents)
        ]
        spawn = asyncio.create_task(sup.launcher.spawn(ROOT_ID, batch))

        ends = {EventType.NODE_LAUNCHED, EventType.NODE_FAILED}

        def launched() -> bool:  # or failed to: a failed launch is told, not waited for
            return sum(
                any(e.type in ends for e in view.events)
                for node_id, view in sup.model.nodes.items() if node_id != ROOT_ID
            ) >= agents  # fmt: skip

        def settled() -> bool:
            nodes = [n for n in sup.model.nodes.values() if n.node.id != ROOT_ID]
            return len(nodes) >= agents and not any(n.node.live for n in nodes)

        try:
            await _until(launched, "every agent launched")
        except BaseException:
            await sup.close()
            raise
        launched_s = time.monotonic() - began
        machine_mb = (psutil.virtual_memory().used - used) / 2**20
        nodes = await spawn
        assert len(nodes) == agents
        await _until(settled, "every agent settled")
        settled_s = time.monotonic() - began
        figures = Figures(
            launched_s=launched_s,
            settled_s=settled_s,
            host_cpu_s=_cpu(me.cpu_times()) - host,
            machine_cpu_s=_cpu(psutil.cpu_times()) - machine,
            writes=0,
            rss_mb=(me.memory_info().rss - rss) / 2**20,
            machine_mb=machine_mb,
            failed=sum(
                any(e.type is EventType.NODE_FAILED for e in view.events)
                for node_id, view in sup.model.nodes.items() if node_id != ROOT_ID
            ),
        )  # fmt: skip
        ledger = sup.run.ledger_path
        await sup.close()
        return dataclasses.replace(figures, writes=ledger_writes(ledger))


def report(label: str, f: Figures, agents: int) -> None:
    print(f"{label} failed launches: {f.failed} of {agents}")
    print(f"{label} all launched: {f.launched_s:.2f} s")
    print(f"{label} all settled: {f.settled_s:.2f} s")
    print(f"{label} host CPU: {f.host_cpu_s:.2f} s ({f.host_cpu_s / f.settled_s * 100:.0f} % "
          "of a core)")
    print(f"{label} machine CPU: {f.machine_cpu_s:.2f} s")
    print(f"{label} ledger writes: {f.writes} ({f.writes / agents:.1f} per agent)")
    print(f"{label} host RSS growth: {f.rss_mb:.0f} MB")
    print(f"{label} machine memory at all launched: +{f.machine_mb:.0f} MB "
          f"({f.machine_mb / agents:.0f} MB per agent)")


async def main(agents: int, node_cpus: int | None, agent_cpus: float | None) -> int:
    import ray
    from ray.cluster_utils import Cluster

    print(f"{agents} quick sim workers at {SPEED:g}x, each a legion-sim process")
    local = await run_mode(agents, None)
    report("local", local, agents)
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
    )
    for _ in range(2):  # room for every actor at one CPU each (logical CPUs), or not
        cluster.add_node(num_cpus=node_cpus or agents)
    cluster.wait_for_nodes()
    try:
        remote = await run_mode(agents, cluster.address, agent_cpus)
        report(f"Ray, 2 nodes of {node_cpus or agents} CPUs", remote, agents)
    finally:
        ray.shutdown()
        cluster.shutdown()
    for name in ("launched_s", "settled_s", "host_cpu_s", "machine_cpu_s", "writes"):
        ratio = getattr(remote, name) / max(getattr(local, name), 1e-9)
        print(f"Ray / local {name.removesuffix('_s').replace('_', ' ')}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="?", type=int, default=AGENTS)
    parser.add_argument("--node-cpus", type=int, default=None)
    parser.add_argument("--agent-cpus", type=float, default=None)
    args = parser.parse_args()
    with calibrated():
        sys.exit(asyncio.run(main(args.agents, args.node_cpus, args.agent_cpus)))
