"""The demo legion (SPEC §1): root → centurions with declared phases → workers and scouts.

Everything runs through the real machinery: root dispatches the centurions through the
Supervisor (as the root shell would), and each centurion — a simulated agent — spawns
its own team through the socket API, exactly as an agent inside a legion does. The team
of each centurion is handed to it as the sim's `children` knob, so the tree's shape and
every agent's behaviour are deterministic for a seed:

- the first team's first member runs as a real OS process (`isolate`);
- its second member is stuck in one long bash call that started minutes ago
  (`history_seconds` + `stall_seconds`), so the stall marker shows at once;
- its third member fails: its provider answers with an empty generation, the host
  retries it once on the same session, the retry comes back empty too (it exits 1);
- the second team works briskly and takes its declared machine to `done`
  (planning → implementing → reviewing → verifying → done) with a `legion-verify`
  command that really runs in its worktree;
- the third team's contract is stricter ("no call without a timeout") and its
  verification honestly finds the file nobody touched: with no rework declared, the lead
  moves itself to `failed` with the refusal as its reason, and root hears of it.

Mail flows the way a team talks: each lead hands every member its part (`handoff`), the
first scout tells the first worker what it found (siblings), and every member reports to
its lead when done. The members read their letters at a turn boundary, so the letters
become DELIVERED on the exact-envelope evidence of their sessions.

The demo works in a **sandbox repository it owns** (`<run>/demo-repo`, one seed commit):
each lead of the first three teams gets a real worktree and branch
`legion/<lead>-<nonce>` there, its members' edits are real commits on it, and root
collects each team that settles — the delivery (branch @ sha) is in the lead's
`node_settled` event and in the summary. The user's own
repository is never touched. Without git on PATH the demo runs without worktrees.
"""

from __future__ import annotations

import asyncio
import logging
import math
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui.phases import DEFAULT_MACHINE

if TYPE_CHECKING:
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.wire.spawn_request import Budgets

__all__ = [
    "Demo",
    "demo_budgets",
    "plan_demo",
    "prepare_sandbox",
    "start_demo",
    "stop_demo",
    "summary",
    "summary_text",
]

log = logging.getLogger(__name__)

TEAM_SIZE = 40  # members per centurion once the legion outgrows three teams
STALL_HISTORY_S = 420.0  # the stuck call started 7 minutes (wall clock) before the demo did
# The sim divides tool durations by `--speed` but not its history, so the stuck call must
# outlast the history at any speed: effectively forever (it is the demo's stuck agent).
STALL_S = 1e9
# A lead's first minute (reading, the contract, dispatching) is replayed instantly, so the
# whole tree is on screen at once and looks mid-flight rather than just started.
LEAD_HISTORY_S = 90.0
FAIL_HISTORY_S = 900.0
# A brisk team's members start almost fresh: they must still be at work when their
# lead's handoff arrives (a letter to a member that already ended bounces).
BRISK_HISTORY_S = 4.0
SANDBOX_DIR = "demo-repo"
# Teams with a worktree of their own. A lead with a worktree runs as an OS process (its
# own cwd, SPEC §6.1) at ~30 MB each: the first three teams tell the branch story, the
# rest of a `--nodes 1000` legion works without one (SPEC §8: peak RSS ≤ 400 MB).
WORKTREE_TEAMS = 3
# What the teams' contracts run at the verification gate, in the lead's worktree.
VERIFY_HEAD = "git log --oneline -1"
VERIFY_STRICT = "! git grep -n 'timeout=None' -- src"  # db.py keeps one: honestly fails
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
    sandbox: Path | None = None  # the repository the teams branch from (None: no git)
    collected: dict[str, dict[str, Any]] = field(default_factory=dict)  # lead name → collect
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


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
    from legion_tui.wire.spawn_request import Budgets

    _teams_n, sizes = _teams(nodes)
    widest = max([8, len(sizes), *sizes])
    return Budgets(max_depth=3, max_children=widest, max_active=max(32, nodes + 8))


def _team_kind(t: int) -> str:
    """`trouble` (team 0: the OS process, the stuck call, the failure), then `brisk`
    (reaches done) and `strict` (fails its verification honestly), in turn."""
    if t == 0:
        return "trouble"
    return "strict" if t % 3 == 2 else "brisk"


def _reports(role: str, name: str, task: str, m: int, first_worker: str | None) -> list[Any]:
    """The letters a member sends when its work is done: a report to its lead, and —
    the first scout — its findings to the first worker (a sibling)."""
    what = "My findings are in" if role == "scout" else "My change is in"
    letters: list[dict[str, str]] = [
        {
            "to": "parent",
            "kind": "report",
            "subject": f"Done: {name}",
            "body": f"{task} {what} — see my session for details.",
        }
    ]
    if role == "scout" and m == 2 and first_worker:
        letters.append(
            {
                "to": first_worker,
                "kind": "notice",
                "subject": f"Findings for {first_worker}",
                "body": "The call sites you will touch are listed in my last answer.",
            }
        )
    return letters


def plan_demo(nodes: int, seed: int, *, sandbox: bool = False) -> list[dict[str, Any]]:
    """The centurions to dispatch, each with its team as the sim `children` knob.
    `sandbox`: the teams work in a git repository, so their contracts check it."""
    teams, sizes = _teams(nodes)
    out: list[dict[str, Any]] = []
    for t in range(teams):
        kind = _team_kind(t)
        members: list[dict[str, Any]] = []
        counts: dict[str, int] = {}
        for m in range(sizes[t]):
            role = "scout" if m % 3 == 2 else "worker"
            n = counts.get(role, 0)
            counts[role] = n + 1
            name = f"{role}-{n}"
            task = f"{TASKS[(t + m) % len(TASKS)]} (team {t})."
            child: dict[str, Any] = {
                "role": role,
                "name": name,
                "task": task,
                "seed": seed * 100_003 + t * 1_000 + m,
            }
            mail = _reports(role, name, task, m, "worker-0" if sizes[t] > 1 else None)
            if kind == "trouble" and role == "worker":
                # Members start part-way into their work (deterministic per position);
                # not a scout, whose whole run fits in that much history: it ended
                # before its lead's handoff came, and the letter bounced.
                child["sim"] = {"history_seconds": float((t * 11 + m * 7) % 45), "mail": mail}
            elif kind == "trouble":
                child["sim"] = {"history_seconds": float(m % 3) * BRISK_HISTORY_S / 2,
                                "mail": mail}  # fmt: skip
            else:
                child["sim"] = {
                    "history_seconds": float(m % 3) * BRISK_HISTORY_S / 2,
                    "quick": True,
                    "mail": mail,
                }
            if kind == "trouble" and m == 0:
                child["isolate"] = True  # a real OS process
            elif kind == "trouble" and m == 1:
                child["sim"] = {"history_seconds": STALL_HISTORY_S, "stall_seconds": STALL_S}
            elif kind == "trouble" and m == 2:
                # Its whole run is history: an empty generation at once, retried once by
                # the host, empty again — failed (provider-empty-generation; retried once).
                child["sim"] = {"fail": True, "history_seconds": FAIL_HISTORY_S}
                child["handoff"] = False  # it has failed before its lead could write
            members.append(child)
        lead: dict[str, Any] = {"children": members, "history_seconds": LEAD_HISTORY_S}
        machine = DEFAULT_MACHINE.to_dict()
        tree = sandbox and t < WORKTREE_TEAMS
        if kind != "trouble":
            lead["quick"] = True
        if tree and kind == "brisk":
            lead["verify"] = [VERIFY_HEAD]
        elif tree and kind == "strict":
            lead["verify"] = [VERIFY_HEAD, VERIFY_STRICT]
            machine["maxRework"] = 0  # no second round: a failed verification ends it
        out.append(
            {
                "role": "centurion",
                "name": f"lead-{t}",
                "task": f"Lead team {t}: {TASKS[t % len(TASKS)].lower()} end to end.",
                "seed": seed * 100_003 + t,
                "sim": lead,
                "phases": machine,
                "worktree": tree,
            }
        )
    return out


async def prepare_sandbox(supervisor: Supervisor) -> Path | None:
    """`<run>/demo-repo`: a fresh repository with the demo project in one commit, made
    the supervisor's sandbox (worktrees come from it, never from the user's repository).
    None — and no worktrees — when git is missing or refuses."""
    from legion_tui.git.worktree import WorktreeError, create_sandbox_repo
    from legion_tui.sim.script import SANDBOX_FILES

    path = supervisor.run.dir / SANDBOX_DIR
    try:
        await create_sandbox_repo(path, SANDBOX_FILES, "The demo project")
    except WorktreeError as err:
        log.warning("the demo runs without worktrees: %s", err)
        return None
    supervisor.sandbox = path
    return path


async def start_demo(supervisor: Supervisor, nodes: int, seed: int, speed: float) -> Demo:
    """Dispatch the demo legion from root; returns once the centurions run (their teams
    follow as each centurion spawns them through the socket)."""
    demo = Demo(planned_nodes=nodes, started_at=time.time())
    demo.sandbox = await prepare_sandbox(supervisor)
    try:
        await _dispatch(supervisor, demo, seed)
    except BaseException:
        await stop_demo(demo)  # the caller gets no Demo to stop: the collectors end here
        raise
    return demo


async def _dispatch(supervisor: Supervisor, demo: Demo, seed: int) -> None:
    from legion_tui.wire.names import ROOT_ID
    from legion_tui.wire.spawn_request import ChildRequest

    for lead in plan_demo(demo.planned_nodes, seed, sandbox=demo.sandbox is not None):
        request = ChildRequest(
            role=lead["role"],
            task=lead["task"],
            name=lead["name"],
            # The demo is a simulation by definition: it asks for the sim explicitly (the
            # bundled cards say `auto`, which would start a real agent). The teams follow:
            # a simulated lead's children resolve to sim too.
            kind="sim",
            phases=lead["phases"],
            worktree=lead["worktree"],
            sim=lead["sim"],
            seed=lead["seed"],
        )
        (node,) = await supervisor.launcher.spawn(ROOT_ID, [request])
        demo.centurions.append(node.id)
        demo.tasks.append(
            asyncio.create_task(_collect_team(supervisor, demo, node.name), name="demo-root")
        )


async def _collect_team(supervisor: Supervisor, demo: Demo, lead: str) -> None:
    """Root's part: wait for a team to end, then collect it (its output file and its
    delivery — branch @ sha — are what root hands on)."""
    from legion_tui.ledger.errors import LedgerError
    from legion_tui.wire.names import ROOT_ID, OpError

    try:
        while True:
            result = await supervisor.queries.wait(ROOT_ID, [lead], None)
            if result.get("state") != "mail":  # a letter for root ends a wait early
                break
        node = supervisor.model.by_path(f"{ROOT_ID}/{lead}")
        if node is None or node.node.status.value == "retired":
            return  # stopped or paused: nothing was handed over
        demo.collected[lead] = await supervisor.queries.collect(ROOT_ID, lead)
    except (OpError, LedgerError, OSError) as err:  # a run folder removed, too
        log.warning("root could not collect %s: %s", lead, err)


async def stop_demo(demo: Demo) -> None:
    """Cancel root's collectors (before the supervisor closes)."""
    for task in demo.tasks:
        task.cancel()
    ended = await asyncio.gather(*demo.tasks, return_exceptions=True)
    for outcome in ended:
        if isinstance(outcome, Exception):  # said, never raised over the caller's error
            log.warning("root's collector failed: %s", outcome)
    demo.tasks.clear()


def summary(supervisor: Supervisor, demo: Demo, elapsed: float) -> dict[str, Any]:
    model = supervisor.model
    counts = model.counts()
    processes = sum(1 for v in model.nodes.values() if v.node.backend == "process")
    from legion_tui.receipts import STALL_SECONDS
    from legion_tui.supervisor.hearing.status import tool_seconds

    # Stuck as the dashboard and `legion status` count it: a replayed history's call
    # runs from the agent's launch, not from its replayed start.
    now = model.clock()
    stalled = sum(
        1
        for v in model.nodes.values()
        if v.node.live
        and v.progress.in_flight
        and tool_seconds(v.node, v.progress.in_flight[-1].started_at, now) >= STALL_SECONDS
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
        "mail": _mail_counts(supervisor),
        "teams": [_team(supervisor, demo, lead_id) for lead_id in demo.centurions],
        "events_written": supervisor.events_written,
        "progress_updates": supervisor.progress_updates,
        "events_per_s": round(handled / elapsed, 1) if elapsed > 0 else 0.0,
        "elapsed_s": round(elapsed, 2),
        "peak_rss_mb": round(peak_kb / 1024, 1),
    }


def _mail_counts(supervisor: Supervisor) -> dict[str, int]:
    """Every letter of the run by state (each is counted at its recipient)."""
    out = {"pending": 0, "accepted": 0, "delivered": 0, "bounced": 0, "obsolete": 0}
    for view in supervisor.model.nodes.values():
        for key in out:
            out[key] += int(getattr(view.mail, key))
    return out


def _team(supervisor: Supervisor, demo: Demo, lead_id: str) -> dict[str, Any]:
    view = supervisor.model.nodes[lead_id]
    node = view.node
    team: dict[str, Any] = {
        "name": node.name,
        "phase": node.phase,
        "status": node.status.value,
        "members": len(supervisor.model.children(lead_id)),
    }
    collected = demo.collected.get(node.name)
    verdict = collected.get("verdict") if collected else None
    if isinstance(verdict, dict):
        team["verdict"] = {"ok": verdict.get("ok"), "reason": verdict.get("reason")}
    delivery = collected.get("delivery") if collected else None
    if isinstance(delivery, dict):
        team["delivery"] = {
            "branch": delivery.get("branch"),
            "head_sha": delivery.get("head_sha"),
            "commits": delivery.get("commits"),
        }
    return team


def _team_line(team: dict[str, Any]) -> str:
    line = f"  {team['name']}: {team['phase'] or '—'} ({team['status']}, {team['members']} members)"
    verdict = team.get("verdict")
    if verdict is not None:
        line += f" · {'✓' if verdict.get('ok') else '✗'} {verdict.get('reason') or ''}".rstrip()
    delivery = team.get("delivery")
    if delivery is not None:
        line += (
            f" · delivered {delivery['branch']} @ {str(delivery['head_sha'])[:7]}"
            f" ({delivery['commits']} commits)"
        )
    return line


def summary_text(report: dict[str, Any]) -> str:
    mail = report["mail"]
    return "\n".join(
        [
            f"legion demo · run {report['run_id']} · session {report['session']}",
            f"nodes: {report['nodes']} (planned {report['planned_nodes']}) · "
            f"live {report['live']} · settled {report['settled']} · failed {report['failed']} "
            f"· retired {report['retired']}",
            f"process children: {report['process_children']} · stalled: {report['stalled']}",
            "teams:",
            *(_team_line(team) for team in report["teams"]),
            f"mail: {mail['delivered']} delivered · {mail['accepted']} accepted · "
            f"{mail['pending']} pending · {mail['bounced']} bounced · "
            f"{mail['obsolete']} obsolete",
            f"tokens out: {report['tokens_out']}",
            f"events handled: {report['events_written']} ledger events + "
            f"{report['progress_updates']} session updates = {report['events_per_s']}/s "
            f"over {report['elapsed_s']} s",
            f"peak RSS: {report['peak_rss_mb']} MB",
        ]
    )
