"""The railway tree as data: which rows are visible and what each cell says.

Pure functions over a `LegionModel`, so the widget (`railway.py`) only paints and caches,
and tests can pin the rail drawing and the activity text without a screen.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from legion_tui import receipts
from legion_tui.fanout.group import AttemptGroup
from legion_tui.model import ATTACHED_REASON, EventType, NodeStatus
from legion_tui.receipts import in_flight_suffix
from legion_tui.state import LegionModel, NodeView

GLYPHS: dict[NodeStatus, str] = receipts.STATUS_GLYPHS  # station glyph by status

# Rail pieces. Each depth level is two cells wide so a child's connector sits exactly
# under its parent's `┬`.
RAIL_CONTINUE = "│ "
RAIL_BLANK = "  "
RAIL_MID = "├─"
RAIL_LAST = "└─"
BRANCH_OPEN = "┬"
BRANCH_FOLDED = "▸"
BRANCH_LEAF = "─"


@dataclass(frozen=True, slots=True)
class TreeRow:
    node_id: str  # a node's id, or an attempt group's `row_id`
    depth: int
    rail: str  # tracks + connector + branch, e.g. "│ ├─┬"
    hidden: int  # descendants hidden by a fold (0 when unfolded or a leaf)
    group: AttemptGroup | None = None  # the row of a fan-out's attempt group


def _stuck(view: NodeView, now: float) -> bool:
    stack = view.progress.in_flight
    return view.node.live and bool(stack) and tool_seconds(view, stack[-1].started_at, now) >= (
        receipts.STALL_SECONDS
    )


# `:word` in the filter: agents by state rather than by name (as agent-deck and k9s do).
STATUS_FILTERS: dict[str, Callable[[NodeView, float], bool]] = {
    "live": lambda view, _now: view.node.live,
    "waiting": lambda view, _now: view.node.status is NodeStatus.BLOCKED,
    "stuck": _stuck,
    "failed": lambda view, _now: view.node.outcome is NodeStatus.FAILED,
    "settled": lambda view, _now: view.node.outcome is NodeStatus.SETTLED,
    "retired": lambda view, _now: view.node.status is NodeStatus.RETIRED,
}


def _matches(view: NodeView, words: list[str], now: float) -> bool:
    """Every word must match: `:failed` a state (STATUS_FILTERS), any other word a part
    of the name, role, path or task — `worker :live` is the live workers, `codec` the
    agent whose task is "Review idna/codec.py"."""
    node = view.node
    for word in words:
        test = STATUS_FILTERS.get(word[1:]) if word.startswith(":") else None
        if test is not None:
            if not test(view, now):
                return False
        elif not (word in node.name.lower() or word in node.role or word in node.path.lower()
                  or word in node.task.lower()):
            return False
    return True


def _kept_by_filter(model: LegionModel, needle: str, now: float) -> set[str]:
    """Ids that match the filter plus every ancestor of a match (so the rail stays whole)."""
    kept: set[str] = set()
    words = needle.split()
    for view, _depth in model.walk():
        if _matches(view, words, now):
            nid: str | None = view.node.id
            while nid is not None and nid not in kept:
                kept.add(nid)
                parent = model.nodes.get(nid)
                nid = parent.node.parent_id if parent is not None else None
    return kept


def _count_descendants(model: LegionModel, node_id: str) -> int:
    return sum(1 for _ in model.walk(node_id))


def flatten(
    model: LegionModel, folded: set[str], needle: str = "", now: float | None = None
) -> list[TreeRow]:
    """Visible rows in launch order. A filter shows matches and their ancestors and
    ignores folds (a match hidden inside a fold would make the filter look broken).
    `now` dates the `:stuck` filter (the model's clock when not given)."""
    needle = needle.strip().lower()
    at = model.clock() if now is None else now
    kept = _kept_by_filter(model, needle, at) if needle else None
    rows: list[TreeRow] = []

    def visible_children(node_id: str | None) -> list[str | AttemptGroup]:
        """Children in launch order; a fan-out's attempts as one group, where its first
        attempt was."""
        children = model.children(node_id)
        if kept is not None:
            children = [c for c in children if c in kept]
        out: list[str | AttemptGroup] = []
        place: dict[str, int] = {}  # a group's index in `out`
        for child in children:
            group = model.nodes[child].node.attempt_group
            if group is None or node_id is None:
                out.append(child)
            elif group in place:
                known = out[place[group]]
                assert isinstance(known, AttemptGroup)
                out[place[group]] = AttemptGroup(node_id, group, (*known.attempt_ids, child))
            else:
                place[group] = len(out)
                out.append(AttemptGroup(node_id, group, (child,)))
        return out

    def visit(item: str | AttemptGroup, depth: int, prefix: str, last: bool) -> None:
        node_id = item.row_id if isinstance(item, AttemptGroup) else item
        children = (list(item.attempt_ids) if isinstance(item, AttemptGroup)
                    else visible_children(item))  # fmt: skip
        is_folded = kept is None and node_id in folded and bool(children)
        if not children:
            branch = BRANCH_LEAF
        elif is_folded:
            branch = BRANCH_FOLDED
        else:
            branch = BRANCH_OPEN
        connector = "" if depth == 0 else (RAIL_LAST if last else RAIL_MID)
        hidden = 0
        if is_folded:  # the agents below it (a group's row is none)
            if isinstance(item, AttemptGroup):
                hidden = sum(1 + _count_descendants(model, a) for a in item.attempt_ids)
            else:
                hidden = _count_descendants(model, node_id)
        group = item if isinstance(item, AttemptGroup) else None
        rows.append(TreeRow(node_id, depth, prefix + connector + branch, hidden, group))
        if is_folded:
            return
        child_prefix = prefix if depth == 0 else prefix + (RAIL_BLANK if last else RAIL_CONTINUE)
        for i, child in enumerate(children):
            visit(child, depth + 1, child_prefix, i == len(children) - 1)

    tops = visible_children(None)
    for i, top in enumerate(tops):
        visit(top, 0, "", i == len(tops) - 1)
    return rows


# ----- cell texts ----------------------------------------------------------------------


def elapsed_seconds(view: NodeView, now: float, floor_at: float | None = None) -> float:
    """How long the agent has run (live: launch → now) or ran (ended: launch → its last
    ledger update, the settle). An ended agent never reads less than its own session
    shows: one whose session history predates the ledger's launch record — the demo
    starts mid-flight — settled "at once" by the ledger and read 00:00:00. `floor_at`,
    its parent's launch: it never reads longer than its parent has existed (a replayed
    history made a scout 00:00:32 old under a root at 00:00:05)."""
    node = view.node
    if not node.created_at:
        return 0.0
    end = now if node.live else (node.updated_at or now)
    span = end - node.created_at
    progress = view.progress
    if not node.live and progress.rate_series and progress.last_entry_at is not None:
        span = max(span, progress.last_entry_at - progress.rate_series[0].start)
    if floor_at:
        span = min(span, end - floor_at)
    return max(0.0, span)


def tool_seconds(view: NodeView, started_at: float, now: float) -> float:
    """How long a tool call has run, never longer than its agent has: an agent started
    mid-flight (the demo replays a history with past timestamps) read "in bash for
    06:51" four seconds after its launch, and was already "stuck"."""
    return max(0.0, now - max(started_at, view.node.created_at))


def fmt_tokens(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def fmt_rate(tok_s: float) -> str:
    return f"{tok_s:.0f} tok/s"


def in_flight_context(view: NodeView) -> str:
    """` (inside codemode ×2)` when parent ids chain the stack, ` (+N more)` otherwise —
    the same words `legion status` uses (`supervisor.status.in_flight_suffix`)."""
    return in_flight_suffix(view.progress.in_flight)


def _verdict_of(view: NodeView) -> tuple[bool, str] | None:
    verdict = view.progress.verdict
    if verdict is not None:
        return verdict.ok, verdict.reason or ""
    raw = view.node.verdict
    return _parse_verdict(raw) if raw else None


@lru_cache(maxsize=256)
def _parse_verdict(raw: str) -> tuple[bool, str] | None:
    """The ledger's verdict JSON → (ok, reason); parsed once per distinct text, not once
    per repaint of every settled row."""
    try:
        data = json.loads(raw)
    except (ValueError, TypeError):
        return None
    if isinstance(data, dict) and isinstance(data.get("ok"), bool):
        reason = data.get("reason")
        return data["ok"], reason if isinstance(reason, str) else ""
    return None


class Activity(NamedTuple):
    """What the node is doing, and which colour class it wants (a tuple: one is made
    for every painted row, and a frozen dataclass costs twice as much to make)."""

    text: str
    tone: str  # "text" | "warning" | "ok" | "fail" | "dim"


def aborted_line(view: NodeView) -> str | None:
    """A live agent whose turn an abort cut, idle since: where it was cut and that a
    steer goes on (its last `node_aborted` that interrupted something)."""
    event = next((e for e in reversed(view.events) if e.type is EventType.NODE_ABORTED
                  and e.data.get("outcome") == "interrupted"), None)  # fmt: skip
    if event is None:
        return None
    tool, seconds = event.data.get("tool"), event.data.get("tool_seconds")
    where = "between tool calls"
    if isinstance(tool, str) and isinstance(seconds, int | float):
        where = f"in {tool} after {receipts.fmt_duration(seconds)}"
    return f"aborted {where} · s steers it on"


def blocked_question(view: NodeView) -> str | None:
    """What a BLOCKED node's agent asks (its last `node_blocked` event's question)."""
    event = view.last(EventType.NODE_BLOCKED)
    question = None if event is None else event.data.get("question")
    return question if isinstance(question, str) and question else None


def activity(view: NodeView, now: float) -> Activity:
    progress = view.progress
    node = view.node
    if progress.read_error:
        return Activity(f"session unreadable: {progress.read_error}", "fail")
    if node.status is NodeStatus.STARTING and view.note:
        return Activity(view.note, "warning")  # the host's word on its start (Ray's queue)
    if node.status is NodeStatus.BLOCKED:
        # Before the tool clock: Claude's tool waits in flight while its permission is asked.
        question = blocked_question(view)
        text = f"needs you: {question}" if question else "blocked · waiting for input"
        return Activity(text, "warning")
    if node.live and progress.in_flight:
        top = progress.in_flight[-1]
        secs = tool_seconds(view, top.started_at, now)
        text = receipts.working(top.name, secs) + in_flight_context(view)
        if secs >= receipts.STALL_SECONDS:
            stall = receipts.stall_marker(node.name, top.name, secs)
            return Activity(f"{text} · {stall}", "warning")
        return Activity(text, "text")
    if node.live and progress.last_stop_reason == "aborted":
        cut = aborted_line(view)
        if cut is not None:
            return Activity(cut, "warning")
    if node.live and view.terminal_line and not progress.entries:
        # An exec command that writes no session: its terminal says what it is doing.
        return Activity(view.terminal_line, "text")
    if node.live and progress.not_written_yet:
        waiting = "no output yet" if node.kind == "exec" else receipts.FIRST_ANSWER_PENDING
        return Activity(waiting, "dim")
    if node.status in (NodeStatus.SETTLED, NodeStatus.FAILED):
        verdict = _verdict_of(view)
        released = " · released" if view.released else ""  # its idle process ended
        checks = view.last(EventType.CHECKS) if node.status is NodeStatus.SETTLED else None
        if checks is not None:  # the project's checks on its work (issue 34)
            words = receipts.checks_words(checks.data)
            tone = "fail" if words.startswith("✗") else "warning" if "running" in words else None
            ok, head = True, ""
            if verdict is not None:
                ok, reason = verdict
                head = ("✓ " if ok else "✗ ") + reason + " · "
            return Activity(head + words + released, tone or ("ok" if ok else "fail"))
        if verdict is not None:
            ok, reason = verdict
            return Activity(("✓ " if ok else "✗ ") + reason + released, "ok" if ok else "fail")
        if released:
            return Activity("idle" + released, "dim")
        if node.status is NodeStatus.FAILED:
            return Activity("✗ " + (node.error or "failed"), "fail")
        if view.terminal_line:
            return Activity(view.terminal_line, "dim")  # an exec command's last words
    if node.status is NodeStatus.RETIRED:
        if view.interrupted and node.error:  # its resume failed: the agent's own words
            return Activity(f"interrupted · {node.error} · r retries", "fail")
        retired = view.last(EventType.NODE_RETIRED)
        if view.interrupted and retired is not None and retired.data.get("reason") == (
            ATTACHED_REASON
        ):  # its own UI has its session (or had it, when the host ended meanwhile)
            return Activity("attached · r takes it back", "warning")
        if view.interrupted or view.stopped:
            return Activity(("interrupted" if view.interrupted else "stopped") + " · r resumes",
                            "dim")
        return Activity(f"retired · {task_line(node.task)}" if node.task else "retired", "dim")
    if view.note:  # the host's own word: a lead waiting for its members, root's last notice
        return Activity(view.note, "dim")
    # Nothing to say of what it does now: what it was asked to do (find it by its work).
    task = task_line(node.task)
    return Activity(task, "dim") if task else Activity("", "text")


def task_line(task: str) -> str:
    """A task's first line with words in it (a long task is cut by the row's width, so
    only its head is looked at: a task may be 128 KiB, and rows are painted per frame)."""
    return task[:ROW_TASK_CHARS].lstrip().partition("\n")[0].strip()


ROW_TASK_CHARS = 1024  # more than any row shows
