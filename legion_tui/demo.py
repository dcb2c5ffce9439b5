"""The demo legion (SPEC §1): root → centurions with declared phases → workers and scouts.

Everything runs through the real machinery: root dispatches the centurions through the
Supervisor (as the root shell would), and each centurion — a simulated agent — spawns
its own team through the socket API, exactly as an agent inside a legion does. The team
of each centurion is handed to it as the sim's `children` knob, so the tree's shape and
every agent's behaviour are deterministic for a seed:

- the first team's first member runs as a real OS process (`isolate`);
- its second member is stuck in one long bash call that started minutes ago
  (`history_seconds` + `stall_seconds`), so the stall marker shows at once;
- its third member fails (provider-empty-generation, exit 1).
"""

from __future__ import annotations

import math
import resource
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from legion_tui.phases import DEFAULT_MACHINE

if TYPE_CHECKING:
    from legion_tui.supervisor.core import Budgets, Supervisor

__all__ = ["Demo", "demo_budgets", "plan_demo", "start_demo", "summary", "summary_text"]

TEAM_SIZE = 40  # members per centurion once the legion outgrows three teams
STALL_HISTORY_S = 420.0  # the stuck call started 7 minutes (wall clock) before the demo did
# The sim divides tool durations by `--speed` but not its history, so the stuck call must
# outlast the history at any speed: effectively forever (it is the demo's stuck agent).
STALL_S = 1e9
# A lead's first minute (reading, the contract, dispatching) is replayed instantly, so the
# whole tree is on screen at once and looks mid-flight rather than just started.
LEAD_HISTORY_S = 90.0
FAIL_HISTORY_S = 900.0
TASKS = (
    "Fix the retry path",
    "Add order validation",
    "Tidy config loading",
    "Harden the CLI parser",
    "Survey the storage layer",
    "Profile the hot loop",
)


@dataclass(slots=True)
class Demo:
    centurions: list[str] = field(default_factory=list)  # node ids
    planned_nodes: int = 0
    started_at: float = 0.0


def _teams(nodes: int) -> tuple[int, list[int]]:
    """(centurions, members per team) for `nodes` agents in all, root included."""
    agents = max(0, nodes - 1)
    if agents == 0:
        return 0, []
    if agents <= 3:
        teams = 1
    elif agents <= 3 + 3 * TEAM_SIZE:
        teams = min(3, max(2, agents // 6))
    else:
        teams = math.ceil(agents / (TEAM_SIZE + 1))
    members = agents - teams
    sizes = [members // teams + (1 if i < members % teams else 0) for i in range(teams)]
    return teams, sizes


def demo_budgets(nodes: int) -> Budgets:
    """The demo raises the budgets so `--nodes 1000` fits (SPEC §5: the demo raises them)."""
    from legion_tui.supervisor.core import Budgets

    _teams_n, sizes = _teams(nodes)
    widest = max([8, len(sizes), *sizes])
    return Budgets(max_depth=3, max_children=widest, max_active=max(32, nodes + 8))


def plan_demo(nodes: int, seed: int) -> list[dict[str, Any]]:
    """The centurions to dispatch, each with its team as the sim `children` knob."""
    teams, sizes = _teams(nodes)
    out: list[dict[str, Any]] = []
    for t in range(teams):
        members: list[dict[str, Any]] = []
        counts: dict[str, int] = {}
        for m in range(sizes[t]):
            role = "scout" if m % 3 == 2 else "worker"
            n = counts.get(role, 0)
            counts[role] = n + 1
            child: dict[str, Any] = {
                "role": role,
                "name": f"{role}-{n}",
                "task": f"{TASKS[(t + m) % len(TASKS)]} (team {t}).",
                "seed": seed * 100_003 + t * 1_000 + m,
            }
            # Members start part-way into their work (deterministic per position).
            child["sim"] = {"history_seconds": float((t * 11 + m * 7) % 45)}
            if t == 0 and m == 0:
                child["isolate"] = True  # a real OS process
            elif t == 0 and m == 1:
                child["sim"] = {"history_seconds": STALL_HISTORY_S, "stall_seconds": STALL_S}
            elif t == 0 and m == 2:
                # Its whole run is history: it fails (provider-empty-generation) at once.
                child["sim"] = {"fail": True, "history_seconds": FAIL_HISTORY_S}
            members.append(child)
        out.append(
            {
                "role": "centurion",
                "name": f"lead-{t}",
                "task": f"Lead team {t}: {TASKS[t % len(TASKS)].lower()} end to end.",
                "seed": seed * 100_003 + t,
                "sim": {"children": members, "history_seconds": LEAD_HISTORY_S},
            }
        )
    return out


async def start_demo(supervisor: Supervisor, nodes: int, seed: int, speed: float) -> Demo:
    """Dispatch the demo legion from root; returns once the centurions run (their teams
    follow as each centurion spawns them through the socket)."""
    from legion_tui.supervisor.core import ROOT_ID, ChildRequest

    demo = Demo(planned_nodes=nodes, started_at=time.time())
    machine = DEFAULT_MACHINE.to_dict()
    for lead in plan_demo(nodes, seed):
        request = ChildRequest(
            role=lead["role"],
            task=lead["task"],
            name=lead["name"],
            phases=machine,
            sim=lead["sim"],
            seed=lead["seed"],
        )
        (node,) = await supervisor.spawn(ROOT_ID, [request])
        demo.centurions.append(node.id)
    return demo


def summary(supervisor: Supervisor, demo: Demo, elapsed: float) -> dict[str, Any]:
    model = supervisor.model
    counts = model.counts()
    processes = sum(1 for v in model.nodes.values() if v.node.backend == "process")
    stalled = sum(
        1
        for v in model.nodes.values()
        if v.node.live
        and v.progress.in_flight
        and model.clock() - v.progress.in_flight[-1].started_at >= 300
    )
    handled = supervisor.events_written + supervisor.progress_updates
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "run_id": model.run_id,
        "session": model.session_name,
        "planned_nodes": demo.planned_nodes,
        "nodes": len(model.nodes),
        "live": counts["live"],
        "settled": counts["settled"],
        "failed": counts["failed"],
        "retired": counts["retired"],
        "process_children": processes,
        "stalled": stalled,
        "tokens_out": sum(v.progress.tokens.output for v in model.nodes.values()),
        "events_written": supervisor.events_written,
        "progress_updates": supervisor.progress_updates,
        "events_per_s": round(handled / elapsed, 1) if elapsed > 0 else 0.0,
        "elapsed_s": round(elapsed, 2),
        "peak_rss_mb": round(peak_kb / 1024, 1),
    }


def summary_text(report: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"legion demo · run {report['run_id']} · session {report['session']}",
            f"nodes: {report['nodes']} (planned {report['planned_nodes']}) · "
            f"live {report['live']} · settled {report['settled']} · failed {report['failed']} "
            f"· retired {report['retired']}",
            f"process children: {report['process_children']} · stalled: {report['stalled']}",
            f"tokens out: {report['tokens_out']}",
            f"events handled: {report['events_written']} ledger events + "
            f"{report['progress_updates']} session updates = {report['events_per_s']}/s "
            f"over {report['elapsed_s']} s",
            f"peak RSS: {report['peak_rss_mb']} MB",
        ]
    )
