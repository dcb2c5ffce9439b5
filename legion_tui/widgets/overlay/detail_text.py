"""What the detail overlay says about one node, as plain strings (pure, testable)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from legion_tui import receipts
from legion_tui.costs import cost_text
from legion_tui.model import EventType, MailState
from legion_tui.model_records import Message
from legion_tui.render.rates import node_rate
from legion_tui.state import NodeView
from legion_tui.widgets.tree.rows import fmt_tokens, in_flight_context, tool_seconds


def clock_text(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


# Parts of the overlay header dropped first when the frame is too narrow (an 80×24
# terminal leaves ≈ 58 columns): the cost and the live rate outlast the token counts.
HEADER_DROP_ORDER = ("avg", "pid", "tokens", "role", "phase")


def header_line(view: NodeView, now: float | None = None, width: int | None = None) -> str:
    """name · role · kind · status · phase · tok/s now · cost · tokens · decode avg · pid.

    `tok/s now` is the figure the tree row, the header and the chart show (render.rates);
    a stopped agent has none. The session's average decode rate is labelled as such, so
    it never reads as a second, contradicting "now". Cut to `width` by dropping parts in
    HEADER_DROP_ORDER."""
    node, progress = view.node, view.progress
    at = time.time() if now is None else now
    parts: list[tuple[str, str]] = [("name", node.name), ("role", node.role)]
    # `simulated` in place of the kind: the tokens that follow are pretend. The status is
    # the outcome the tree's glyph shows: a team settled in its `failed` phase failed.
    parts += [("kind", "simulated" if node.simulated else node.kind)]
    parts += [("status", node.outcome.value)]
    if node.phase:
        parts.append(("phase", f"phase {node.phase}"))
    if node.live:
        parts.append(("now", f"{node_rate(view, at):.0f} tok/s {receipts.LIVE_WINDOW}"))
    if not node.simulated:  # a simulated agent's cost is pretend: no money was spent
        parts.append(("cost", cost_text(progress.cost, progress.cost_basis, long=True)))
    tokens = f"{fmt_tokens(progress.tokens.output)} out / {fmt_tokens(progress.tokens.input)} in"
    parts.append(("tokens", tokens))
    if progress.tok_s:
        parts.append(("avg", f"decode avg {progress.tok_s:.0f} tok/s"))
    if node.pid is not None:
        parts.append(("pid", f"pid {node.pid}"))
    text = " · ".join(t for _k, t in parts)
    for drop in HEADER_DROP_ORDER:
        if width is None or len(text) <= width:
            break
        parts = [(k, t) for k, t in parts if k != drop]
        text = " · ".join(t for _k, t in parts)
    if width is not None and len(text) > width:
        # Still too long (a long name): cut visibly, never mid-figure at the frame's edge.
        text = text[: max(0, width - 1)] + "…"
    return text


def overlay_head(view: NodeView, now: float, width: int, branch: str = "") -> str:
    """The overlay's head line: the header and the worktree's branch note when both fit
    in `width`; without room, the figures win (the branch is on the Diff tab) — at 80×24
    the branch note left the header 28 columns and a bare `0` of `0 tok/s now`."""
    if branch:
        with_branch = header_line(view, now, width - len(branch)) + branch
        if len(with_branch) <= width and "…" not in with_branch:
            return with_branch
    return header_line(view, now, width)


def skipped_line(view: NodeView) -> str:
    progress = view.progress
    text = f"session: {progress.entries} entries · {progress.skipped_lines} skipped lines"
    if progress.read_error:
        text += f" · session unreadable: {progress.read_error}"
    elif progress.not_written_yet and view.node.kind == "exec":
        # A command writes no session (issue 32 item 6: it said "waiting for its first
        # answer" after it had ended): its terminal is its report.
        return receipts.COMMAND_NO_SESSION
    elif progress.not_written_yet:
        text += f" · {receipts.FIRST_ANSWER_PENDING if view.node.live else 'it wrote none'}"
    return text


def activity_lines(view: NodeView, now: float) -> list[str]:
    """The tool stack and the stall marker; `stall_line` tells which line to colour."""
    progress, node = view.progress, view.node
    if not progress.in_flight:
        lines = ["no tool call in flight"]
    else:
        top = progress.in_flight[-1]
        secs = tool_seconds(view, top.started_at, now)
        lines = [receipts.working(top.name, secs) + in_flight_context(view)]
        if secs >= receipts.STALL_SECONDS and node.live:
            lines.append(receipts.stall_marker(node.name, top.name, secs))
        lines.append("")
        lines.append("tool stack (innermost last):")
        for tool in progress.in_flight:
            secs = tool_seconds(view, tool.started_at, now)
            lines.append(f"  {tool.name:<12} {receipts.fmt_duration(secs)}")
    if progress.last_text:
        lines += ["", "last text:", *progress.last_text.strip().splitlines()[-12:]]
    return lines


def stall_line(view: NodeView, now: float) -> str | None:
    """The stall marker when the innermost tool call has run ≥ 5 min, else None."""
    stack = view.progress.in_flight
    if not stack or not view.node.live:
        return None
    secs = tool_seconds(view, stack[-1].started_at, now)
    if secs < receipts.STALL_SECONDS:
        return None
    return receipts.stall_marker(view.node.name, stack[-1].name, secs)


def mailbox_line(view: NodeView) -> str:
    m = view.mail
    return (
        f"pending {m.pending} · accepted {m.accepted} · delivered {m.delivered}"
        f" · bounced {m.bounced} · obsolete {m.obsolete}"
    )


def letter_row(msg: Message, own_id: str) -> str:
    """One letter in the Mail tab's list: `12:01:40 ← #7 handoff [normal] delivered: contract`."""
    arrow = "→" if msg.from_node == own_id else "←"
    state = MailState(msg.delivered).name.lower()
    return (
        f"{clock_text(msg.created_at)} {arrow} #{msg.id} {msg.kind.value}"
        f" [{msg.urgency.value}] {state}: {msg.subject}"
    )


def letter_text(msg: Message, name_of: Callable[[str], str]) -> str:
    """A letter opened: who wrote it to whom and when, what became of it, its whole body."""
    state = MailState(msg.delivered).name.lower()
    when = f" {clock_text(msg.delivered_at)}" if msg.delivered_at is not None else ""
    return (
        f"#{msg.id} {msg.kind.value} [{msg.urgency.value}] · {state}{when}\n"
        f"from {name_of(msg.from_node)} to {name_of(msg.to_node)}"
        f" · sent {clock_text(msg.created_at)}\n"
        f"subject: {msg.subject}\n\n"
        f"{msg.body or '(no body)'}"
    )


def _verdict_words(verdict: object) -> str:
    if isinstance(verdict, dict) and isinstance(verdict.get("ok"), bool):
        reason = verdict.get("reason") or ""
        return f" — verdict {'✓' if verdict['ok'] else '✗'} {reason}".rstrip()
    return ""


def _launched(d: dict[str, Any]) -> str:
    how = "resumed" if d.get("resumed") else "launched"
    what = f" as {d['kind']}" if d.get("kind") else ""
    facts = [str(d[k]) for k in ("backend",) if d.get(k)]
    facts += [f"pid {d['pid']}"] if d.get("pid") else []
    facts += [f"card {d['card']}"] if d.get("card") else []
    return how + what + (f" ({', '.join(facts)})" if facts else "")


def _retired(d: dict[str, Any]) -> str:
    why = {
        "stop": "stopped",
        "parent-stop": "stopped with its parent",
        "session-shutdown": "paused by the host's exit (resumable)",
        "orphaned": "found orphaned (resumable)",
    }.get(str(d.get("reason")), f"retired ({d.get('reason')})")
    extra: list[str] = []
    if d.get("execution") in ("success", "failed"):  # it had ended on its own first
        extra.append("it had " + ("succeeded" if d["execution"] == "success" else "failed"))
    if d.get("force"):
        extra.append("forced")
    if d.get("survivors"):
        extra.append(f"left alive: pid {', '.join(str(p) for p in d['survivors'])}")
    return why + (f" ({'; '.join(extra)})" if extra else "")


def _generic(kind: str, d: dict[str, Any]) -> str:
    """An event without a sentence of its own: its words and fields, without JSON."""
    fields = ", ".join(f"{k} {v}" for k, v in sorted(d.items()) if v not in (None, "", [], {}))
    return kind.removeprefix("node_").replace("_", " ") + (f": {fields}" if fields else "")


def _mail(d: dict[str, Any]) -> str:
    """A letter's move: `mail #13 (handoff) sent to worker-0: Handoff: worker-0`."""
    kind = f" ({d['kind']})" if d.get("kind") else ""
    if "state" not in d:  # sent
        subject = f": {d['subject']}" if d.get("subject") else ""
        return f"mail #{d.get('message_id')}{kind} sent to {d.get('to')}{subject}"
    why = f" ({d['reason']})" if d.get("reason") else ""
    return f"mail #{d.get('message_id')} to {d.get('to')} {d['state']}{why}"


_SENTENCES: dict[EventType, Callable[[dict[str, Any]], str]] = {
    EventType.MAIL_SENT: _mail,
    EventType.MAIL_DELIVERED: _mail,
    EventType.MAIL_BOUNCED: _mail,
    EventType.NODE_LAUNCHED: _launched,
    EventType.NODE_SETTLED: lambda d: "settled" + _verdict_words(d.get("verdict")),
    EventType.NODE_FAILED: lambda d: f"failed: {d.get('error') or d.get('reason') or '?'}",
    EventType.NODE_RETIRED: _retired,
    EventType.NODE_ABORTED: lambda d: f"turn aborted ({d.get('outcome')}"
    + (f"; dropped {d['dropped']} queued message(s))" if d.get("dropped") else ")"),
    EventType.NODE_STEERED: lambda d: f"steer {d.get('outcome')}"
    + (" (the retry of an empty answer)" if d.get("retry") else ""),
    EventType.NODE_BLOCKED: lambda d: "blocked, waiting for input",
    EventType.PHASE_CHANGE: lambda d: f"phase {d.get('from')} → {d.get('to')}"
    + "".join(f" · {k} {d[k]}" for k in ("reason", "note") if d.get(k)),
    EventType.VERIFICATION_RESULT: lambda d: f"verification: {d.get('outcome')}",
    EventType.CHECKS: lambda d: f"checks ({d.get('command')}): {receipts.checks_words(d)}"
    + (f" · output {d['output_file']}" if d.get("output_file") else ""),
    EventType.BUDGET_EXCEEDED: lambda d: f"spawn refused: budget {d.get('budget')} "
    f"(limit {d.get('limit')}, asked {d.get('requested')})",
}


def event_sentence(kind: EventType, data: dict[str, Any]) -> str:
    """One event as a sentence a reader follows (`retired: stopped with its parent`),
    never the raw JSON the ledger stores."""
    sentence = _SENTENCES.get(kind)
    try:
        return sentence(data) if sentence is not None else _generic(kind.value, data)
    except (KeyError, TypeError, ValueError):  # an odd payload still reads as something
        return _generic(kind.value, data)


def event_lines(view: NodeView, name_of: Callable[[str], str] | None = None) -> list[str]:
    """The node's events as sentences; `name_of` turns the node ids a letter's event
    carries (`worker-0-c401ca`) into the names the tree shows."""
    if not view.events:
        return ["no events"]
    lines = []
    for ev in view.events:
        data = dict(ev.data)
        if name_of is not None:
            for key in ("from", "to", "node_id"):
                if isinstance(data.get(key), str):
                    data[key] = name_of(data[key])
        lines.append(f"{clock_text(ev.at)} {event_sentence(ev.type, data)}")
    return lines


def footer_text(width: int, tabs: int) -> str:
    """The overlay's own keys, as many as fit (least useful dropped first)."""
    keys = [
        f"1-{tabs} [ ] tabs", "w wrap", "x stop", "a abort", "s steer", "v all lines",
        "r resume", "X force stop", "L land", "A attach", "n new agent", "esc close",
    ]
    order = [
        "n new agent", "L land", "A attach", "X force stop", "r resume", "v all lines",
        "w wrap", "s steer", "a abort",
    ]
    while len(" · ".join(keys)) + 1 > width and order:
        keys.remove(order.pop(0))
    return " " + " · ".join(keys)
