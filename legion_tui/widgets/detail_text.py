"""What the detail overlay says about one node, as plain strings (pure, testable)."""

from __future__ import annotations

import json
import time

from legion_tui import receipts
from legion_tui.model import MailState
from legion_tui.render.rates import node_rate
from legion_tui.state import NodeView
from legion_tui.widgets.tree_rows import fmt_tokens, in_flight_context, tool_seconds


def clock_text(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


# Parts of the overlay header dropped first when the frame is too narrow (an 80×24
# terminal leaves ≈ 58 columns): the cost and the live rate outlast the token counts.
HEADER_DROP_ORDER = ("avg", "pid", "tokens", "role")


def header_line(view: NodeView, now: float | None = None, width: int | None = None) -> str:
    """name · role · kind · status · phase · tok/s now · cost · tokens · decode avg · pid.

    `tok/s now` is the figure the tree row, the header and the chart show (render.rates);
    a stopped agent has none. The session's average decode rate is labelled as such, so
    it never reads as a second, contradicting "now". Cut to `width` by dropping parts in
    HEADER_DROP_ORDER."""
    node, progress = view.node, view.progress
    at = time.time() if now is None else now
    parts: list[tuple[str, str]] = [("name", node.name), ("role", node.role)]
    # `simulated` in place of the kind: the tokens that follow are pretend.
    parts += [("kind", "simulated" if node.simulated else node.kind), ("status", node.status.value)]
    if node.phase:
        parts.append(("phase", f"phase {node.phase}"))
    if node.live:
        parts.append(("now", f"{node_rate(view, at):.0f} tok/s now"))
    if not node.simulated:  # a simulated agent's cost is pretend: no money was spent
        parts.append(("cost", f"${progress.cost:.4f}"))
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
    return text


def skipped_line(view: NodeView) -> str:
    progress = view.progress
    text = f"session: {progress.entries} entries · {progress.skipped_lines} skipped lines"
    if progress.read_error:
        text += f" · session unreadable: {progress.read_error}"
    elif progress.not_written_yet:
        text += f" · {receipts.FIRST_ANSWER_PENDING}"
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


def mail_lines(view: NodeView) -> list[str]:
    m = view.mail
    lines = [
        f"pending {m.pending} · accepted {m.accepted} · delivered {m.delivered}"
        f" · bounced {m.bounced} · obsolete {m.obsolete}",
        "",
    ]
    if not view.messages:
        lines.append("no mail")
    for msg in view.messages:
        arrow = "→" if msg.from_node == view.node.id else "←"
        state = MailState(msg.delivered).name.lower()
        lines.append(
            f"{clock_text(msg.created_at)} {arrow} #{msg.id} {msg.kind.value}"
            f" [{msg.urgency.value}] {state}: {msg.subject}"
        )
    return lines


def event_lines(view: NodeView) -> list[str]:
    if not view.events:
        return ["no events"]
    return [
        f"{clock_text(ev.at)} {ev.type.value} {json.dumps(ev.data, sort_keys=True)}"
        for ev in view.events
    ]
