"""`legion status` / `legion tree`: the document, its text form, and the read-only path.

One document shape serves the live supervisor (socket op `status`) and a run with no live
supervisor (read from the ledger with `read_snapshot` + the session files), so the CLI
prints the same thing either way:

    {run_id, session, live, spent: {usd, tokens}, nodes: [{id, name, path, role, kind,
      simulated, backend, status, phase, pid, tokens_out, tokens, cost_usd, tok_s,
      tok_s_now, activity: {tool, seconds, stalled} | null, note, verdict}]}

Two rates, each named where it is printed: `tok_s` is the session's decode average
(output tokens ÷ the seconds of generation: `legion inspect`'s figure and the detail's
`decode avg`); `tok_s_now` is a live node's rate over the last 10 s as the live host sees
it (the tree's row, the header, the chart's now: `session.live_rate`), None without a
live host or for an ended node.

`spent` and each node's `cost_usd`/`tokens` are the sessions' own figures (`costs`), the
same sums the dashboard's header and `$` column show.

`simulated` (kind sim, not the host's root) is said in every text form too: a pretend
agent's verdict must never read as real work done in the repository.

Display only: a stalled call is named with the lever that can move it; nothing here
ever acts on a node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.commands.invocation import legion_command
from legion_tui.costs import Spend, cost_text, fmt_spend, fmt_usd, spend_of, total_spend
from legion_tui.model import EventType, NodeStatus, outcome_of
from legion_tui.receipts import LIVE_WINDOW, in_flight_suffix
from legion_tui.wire.names import shortest_refs

if TYPE_CHECKING:  # names only: `legion status` formats a document (SPEC §8's verb budget)
    from legion_tui.model_records import InFlightTool, Node
    from legion_tui.session.progress import SessionProgress

__all__ = [
    "activity_of",
    "offline_status",
    "render_status",
    "render_tree",
    "status_document",
    "tool_label",
    "tool_seconds",
]




def tool_label(stack: Sequence[InFlightTool]) -> str:
    """The top (innermost) tool and its place in the stack: `bash (inside codemode ×1)`."""
    return stack[-1].name + in_flight_suffix(stack)


def tool_seconds(node: Node, started_at: float, now: float) -> float:
    """How long a tool call has run, never longer than its agent has: an agent started
    mid-flight (the demo replays a history with past timestamps) read "in bash for
    06:51" four seconds after its launch, and was already "stuck". The dashboard's rows
    and overlay read the same figure (widgets.tree.rows)."""
    return max(0.0, now - max(started_at, node.created_at))


def activity_of(node: Node, progress: SessionProgress, now: float) -> dict[str, Any] | None:
    """{tool, seconds, stalled} for a live node inside a tool call; None otherwise."""
    if not node.live or not progress.in_flight:
        return None
    seconds = tool_seconds(node, progress.in_flight[-1].started_at, now)
    return {
        "tool": tool_label(progress.in_flight),
        "seconds": round(seconds, 1),
        "stalled": seconds >= receipts.STALL_SECONDS,
    }


def _entry(
    node: Node,
    progress: SessionProgress,
    now: float,
    interrupted: bool = False,
    idle: bool = False,
    terminal: str | None = None,
    rate_now: float | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    return {
        "id": node.id,
        "name": node.name,
        "path": node.path,
        "role": node.role,
        "kind": node.kind,
        "simulated": node.simulated,
        "group": node.attempt_group,  # an attempt of this fan-out (issue 34)
        "backend": node.backend,
        "status": node.status.value,
        "phase": node.phase,
        "pid": node.pid,
        "tokens_out": progress.tokens.output,
        "tokens": spend_of(progress).tokens,
        "cost_usd": progress.cost,
        "cost_basis": progress.cost_basis,  # reported (the agent's), estimated or unknown
        "tok_s": round(progress.tok_s, 1),
        "tok_s_now": None if rate_now is None else round(rate_now, 1),
        "activity": activity_of(node, progress, now),
        "verdict": node.verdict_data,
        "error": node.error,
        "unreadable": progress.unreadable,
        "interrupted": interrupted,
        "idle": idle,
        "terminal": terminal,  # an exec command's current terminal line
        # The host's word on a live node: a lead waiting for its members, a start
        # waiting for room on a Ray cluster.
        "note": note,
    }


def status_document(
    run_id: str,
    session: str,
    rows: Sequence[tuple[Node, SessionProgress]],
    now: float,
    *,
    live: bool = True,
    interrupted: frozenset[str] | set[str] = frozenset(),
    idle: frozenset[str] | set[str] = frozenset(),
    terminal: Mapping[str, str] | None = None,
    budget_usd: float | None = None,
    checks: Mapping[str, Mapping[str, Any]] | None = None,
    rates_now: Mapping[str, float] | None = None,
    notes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`budget_usd`: the run's budget (`[budget] usd`), said beside what was spent;
    `checks`: each node's last `checks` event (the project's checks on its work);
    `rates_now`: each live node's tok/s over the last 10 s (the live host's); `notes`:
    what the host says of a live node (`NodeView.note`)."""
    now_of, note_of = rates_now or {}, notes or {}
    lines = terminal or {}
    spent = total_spend(progress for _node, progress in rows)
    refs = shortest_refs(node for node, _progress in rows)
    # The hint to resume an interrupted node, runnable as printed: its shortest unique
    # name, and, with no host to ask, how to start one first.
    legion = legion_command()
    start = "" if live else f"`{legion} tui --session {session}`, then "
    entries = [
        _entry(
            node, progress, now, node.id in interrupted, node.id in idle,
            lines.get(node.id), now_of.get(node.id), note_of.get(node.id),
        )
        for node, progress in rows
    ]
    for entry in entries:
        if checks is not None and entry["id"] in checks:
            entry["checks"] = dict(checks[entry["id"]])
    parents = {node.id: node.parent_id for node, _progress in rows}
    for entry in entries:
        if entry["interrupted"]:
            # Its interrupted ancestors first, outermost first: a member's resume is
            # refused while its lead has ended.
            chain = [entry["id"]]
            while (up := parents.get(chain[-1])) in interrupted:
                chain.append(up)
            with_parents = " --with-parents" if len(chain) > 1 else ""
            entry["resume"] = start + f"`{legion} resume {refs[entry['id']]}{with_parents}`"
    return {
        "run_id": run_id,
        "session": session,
        "live": live,
        # The sessions' sums; `estimated` / `unpriced`: how many of them the usd is an
        # estimate for, or misses calls of (a model no table prices).
        "spent": {
            "usd": spent.usd,
            "tokens": spent.tokens,
            "estimated": spent.estimated,
            "unpriced": spent.unpriced,
        },
        "nodes": entries,
    } | ({"budget_usd": budget_usd} if budget_usd is not None else {})


def _doing(entry: dict[str, Any]) -> list[str]:
    """The lines that lead a node's block: what it is doing right now."""
    activity = entry["activity"]
    status = entry["status"]
    if activity is not None:
        lines = [receipts.working(activity["tool"], activity["seconds"])]
        if activity["stalled"]:
            tool = activity["tool"].split(" (", 1)[0]
            lines.append(receipts.stall_marker(entry["name"], tool, activity["seconds"]))
        return lines
    if entry.get("orphaned"):
        return [
            f"{status} in the ledger, but its host (pid {entry['owner_pid']}) is gone: "
            "orphaned — reopen the session to mark it, then resume it"
        ]
    if entry["role"] == "root":
        return [f"{status} · the host" if status != "running" else "hosting the legion"]
    if status in ("starting", "running", "blocked"):
        if entry.get("terminal"):  # an exec command: its terminal says what it does
            return [f"{status} · terminal: {entry['terminal']}"]
        if entry.get("note"):  # the host's word: waiting for members, or for room
            return [f"{status} · {entry['note']}"]
        if entry.get("idle"):  # e.g. after an abort: context kept, waiting for a steer
            return [f"{status} · idle, no turn running (steer {entry['name']} to continue)"]
        return [f"{status} · between tool calls"]
    verdict = entry["verdict"]
    if status == "settled":
        if isinstance(verdict, dict):
            mark = "✓" if verdict.get("ok") else "✗"
            sim = " (simulated)" if entry.get("simulated") else ""
            return [f"settled · verdict {mark}{sim} {verdict.get('reason') or ''}".rstrip()]
        return ["settled · no verdict"]
    if status == "failed":
        return [f"failed · {entry['error'] or 'no reason recorded'}"]
    if entry.get("interrupted"):
        how = entry.get("resume") or f"`legion resume {entry['name']}`"
        return [f"retired · interrupted by the last exit (resume: {how})"]
    return ["retired"]


def render_status(doc: dict[str, Any]) -> str:
    """One block per node, led by what it is doing (SPEC §6.3)."""
    head = f"legion run {doc['run_id']} · session {doc['session']}"
    spent = doc.get("spent")
    if isinstance(spent, dict):
        known = Spend(spent["usd"], spent["tokens"], spent.get("estimated", 0),
                      spent.get("unpriced", 0))  # fmt: skip
        limit = doc.get("budget_usd")
        of = f" of a {fmt_usd(limit)} budget" if isinstance(limit, int | float) else ""
        head += f" · spent {fmt_spend(known)}{of} · {spent['tokens']} tokens"
    if not doc.get("live", True):
        head += " · no live supervisor (read from the ledger)"
    blocks = [head]
    for e in doc["nodes"]:
        pid = f", pid {e['pid']}" if e["pid"] else ""
        sim = ", simulated" if e.get("simulated") else ""
        group = f", attempt of {e['group']}" if e.get("group") else ""
        lines = [f"{e['path']} ({e['role']}{sim}{group}, {e['status']}{pid})"]
        lines += [f"  {line}" for line in _doing(e)]
        # Each rate with its window (issue 32 item 4): the live one the tree shows, and
        # the decode average over the session's generation time, which `inspect` prints.
        facts = [f"{e['tokens_out']} tokens out"]
        if e.get("tok_s_now") is not None:
            facts.append(f"{e['tok_s_now']:g} tok/s {LIVE_WINDOW}")
        facts.append(f"{e['tok_s']:g} tok/s decode avg")
        basis = e.get("cost_basis", "reported")
        if e.get("cost_usd") or basis != "reported":
            facts.append(cost_text(e["cost_usd"], basis))
        if e["phase"]:
            facts.insert(0, f"phase {e['phase']}")
        if isinstance(e.get("checks"), dict):
            facts.append(receipts.checks_words(e["checks"]))
        if e.get("unreadable") == "ENOENT":  # never written: not an error
            if NodeStatus(e["status"]).live and not e.get("terminal"):
                facts.append(receipts.FIRST_ANSWER_PENDING)
        elif e.get("unreadable"):
            facts.append(f"session unreadable: {e['unreadable']}")
        lines.append("  " + " · ".join(facts))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_tree(
    rows: Sequence[tuple[Node, SessionProgress, int]],
    now: float,
    *,
    terminal: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> str:
    """The tree with railway tracks, status glyphs and verdicts (plain text); a live
    node's row says what `legion status` says it does: an exec command's terminal line,
    the host's note (a member queued on a Ray cluster, a lead waiting for its members)."""
    lines, note_of = terminal or {}, notes or {}
    out: list[str] = []
    last_at_depth: dict[int, bool] = {}
    for i, (node, progress, depth) in enumerate(rows):
        # Is this the last sibling? Look ahead for another row at the same depth before
        # a shallower one.
        last = True
        for _n, _p, d in rows[i + 1 :]:
            if d < depth:
                break
            if d == depth:
                last = False
                break
        last_at_depth[depth] = last
        prefix = "".join("   " if last_at_depth.get(d, True) else "│  " for d in range(depth))
        branch = ("└─ " if last else "├─ ") if depth > 0 else ""
        entry = _entry(node, progress, now, terminal=lines.get(node.id), note=note_of.get(node.id))
        doing = _doing(entry)[0]
        phase = f" [{node.phase}]" if node.phase else ""
        glyph = receipts.STATUS_GLYPHS[node.outcome]
        role = f"{node.role}, sim" if node.simulated else node.role
        out.append(f"{prefix}{branch}{glyph} {node.name} ({role}){phase} — {doing}")
    return "\n".join(out)


def offline_status(
    run_dir: Path, run_id: str, session: str, now: float, *, owner_gone_pid: int | None = None,
    budget_usd: float | None = None,
) -> dict[str, Any]:
    """The status document straight from the ledger and the session files, for a run
    whose supervisor is gone (read-only: nothing is written). `owner_gone_pid`: the host
    died without pausing its nodes (SIGKILL), so the ledger's `running` is stale — said
    so per node; the next start of that session marks them `node_orphaned`."""
    from legion_tui.ledger.snapshot import read_last_events, read_retired_reasons, read_snapshot
    from legion_tui.session.progress import SessionProgress
    from legion_tui.session.reader import read_session
    from legion_tui.supervisor.life.retire_reasons import INTERRUPT_REASONS

    nodes, _usage = read_snapshot(run_dir / "legion.db")
    # Retired by the host's exit (or found orphaned): interrupted, resumable — the word
    # the reopened dashboard uses ("interrupted · r resumes"), not a bare "retired".
    reasons = read_retired_reasons(run_dir / "legion.db")
    interrupted = {
        n.id
        for n in nodes
        if n.status is NodeStatus.RETIRED and reasons.get(n.id) in INTERRUPT_REASONS
        and n.role != "root"
    }
    by_parent: dict[str | None, list[Node]] = {}
    for node in nodes:
        by_parent.setdefault(node.parent_id, []).append(node)
    rows: list[tuple[Node, SessionProgress]] = []
    stack = list(reversed(by_parent.get(None, [])))
    while stack:
        node = stack.pop()
        progress = SessionProgress()
        if node.session_file and Path(node.session_file).exists():
            progress = read_session(node.session_file)
        rows.append((node, progress))
        stack.extend(reversed(by_parent.get(node.id, [])))
    checks = read_last_events(run_dir / "legion.db", EventType.CHECKS)
    doc = status_document(run_id, session, rows, now, live=False, interrupted=interrupted,
                          budget_usd=budget_usd, checks=checks)  # fmt: skip
    if owner_gone_pid is not None:
        for entry in doc["nodes"]:
            if entry["status"] in ("starting", "running", "blocked") and entry["role"] != "root":
                entry["orphaned"] = True
                entry["owner_pid"] = owner_gone_pid
                entry["activity"] = None  # nothing runs it any more
    return doc


def tree_rows_from_doc(doc: dict[str, Any]) -> str:
    """Tree text from a status document (the CLI's offline `legion tree`)."""
    lines = []
    for e in doc["nodes"]:
        depth = e["path"].count("/")
        glyph = receipts.STATUS_GLYPHS[outcome_of(NodeStatus(e["status"]), e.get("phase"))]
        role = f"{e['role']}, sim" if e.get("simulated") else e["role"]
        lines.append(f"{'   ' * depth}{glyph} {e['name']} ({role}) — {_doing(e)[0]}")
    return "\n".join(lines)
