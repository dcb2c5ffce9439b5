"""LegionModel: the one in-memory picture of a legion that the dashboard reads.

The supervisor and the session tailer write it; widgets only read it. Writers mark nodes
dirty; subscribers hear one coalesced signal per event-loop turn carrying the dirty ids,
so a flood of session appends costs one repaint, not one per line.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from legion_tui.inert import inert
from legion_tui.model import EventType, NodeStatus, outcome_counts, stopped_while_running
from legion_tui.model_records import Event, MailboxStats, Message, Node
from legion_tui.session.progress import RateSegment, SessionProgress

Clock = Callable[[], float]  # epoch seconds; tests inject a fixed one
Listener = Callable[[frozenset[str]], None]

EVENTS_PER_NODE = 200
MESSAGES_PER_NODE = 200
ANNOUNCEMENTS_KEPT = 50  # the newest announcements (the toasts are shown as they come)


@dataclass(slots=True)
class NodeView:
    """A node as the dashboard sees it. `revision` grows on every change (cache key)."""

    node: Node
    progress: SessionProgress = field(default_factory=SessionProgress)
    mail: MailboxStats = field(default_factory=MailboxStats)
    events: deque[Event] = field(default_factory=lambda: deque(maxlen=EVENTS_PER_NODE))
    messages: deque[Message] = field(default_factory=lambda: deque(maxlen=MESSAGES_PER_NODE))
    interrupted: bool = False  # retired by a session shutdown, resumable with `r`
    released: bool = False  # settled, its idle process ended (a message starts it again)
    # The message its agent is generating now, from the RPC stream (session/streaming.py).
    streaming: RateSegment | None = None
    # The current line of an exec command's terminal (supervisor/pty_terminal.py): what
    # its row shows, as it writes no session file. None: it has no terminal of ours.
    terminal_line: str | None = None
    # A line the host says about the node when nothing else does (a lead waiting for
    # its members; the root: the last completion notice it was given).
    note: str | None = None
    revision: int = 0

    def last(self, etype: EventType) -> Event | None:
        """Its newest event of `etype` still in the buffer."""
        for event in reversed(self.events):
            if event.type is etype:
                return event
        return None

    @property
    def stopped(self) -> bool:
        """Stopped by the user while it ran, with its session kept: `r` resumes it."""
        if self.node.status is not NodeStatus.RETIRED or self.interrupted:
            return False
        retired = self.last(EventType.NODE_RETIRED)
        return retired is not None and stopped_while_running(retired.data)


class LegionModel:
    def __init__(
        self,
        run_id: str,
        session_name: str,
        *,
        started_at: float | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.run_id = run_id
        self.session_name = session_name
        self.clock = clock
        self.started_at = clock() if started_at is None else started_at
        self.nodes: dict[str, NodeView] = {}
        self._children: dict[str | None, list[str]] = {}
        self._reported_costs: dict[str, float] = {}  # node id → its agent's own total
        self._listeners: list[Listener] = []
        self._dirty: set[str] = set()
        self._flush_scheduled = False
        self.version = 0  # grows on every structural or data change
        self.flushed_version = 0  # the version the last flush's dirty set covers
        self.announcements: deque[str] = deque(maxlen=ANNOUNCEMENTS_KEPT)
        self.announced = 0  # how many were ever made (the dashboard toasts the new ones)
        # The run's dollar limit (`[budget] usd`), shown beside its spend from the start.
        self.budget_usd: float | None = None

    # ----- reading -------------------------------------------------------------------
    def children(self, node_id: str | None) -> list[str]:
        """Ids of the children of `node_id` (None: the top-level nodes), in launch order."""
        return self._children.get(node_id, [])

    @property
    def root_id(self) -> str | None:
        top = self._children.get(None)
        return top[0] if top else None

    def walk(self, node_id: str | None = None) -> Iterator[tuple[NodeView, int]]:
        """Depth-first (view, depth) over the subtree below `node_id` (None: everything)."""
        stack: list[tuple[str, int]] = [(c, 0) for c in reversed(self.children(node_id))]
        while stack:
            nid, depth = stack.pop()
            view = self.nodes[nid]
            yield view, depth
            stack.extend((c, depth + 1) for c in reversed(self.children(nid)))

    def by_path(self, path: str) -> NodeView | None:
        for view in self.nodes.values():
            if view.node.path == path or view.node.name == path:
                return view
        return None

    def counts(self) -> dict[str, int]:
        """live / settled / failed / retired, as the header shows them."""
        return outcome_counts(view.node.outcome for view in self.nodes.values())

    # ----- writing -------------------------------------------------------------------
    def upsert(self, node: Node) -> NodeView:
        view = self.nodes.get(node.id)
        if view is None:
            view = NodeView(node=node)
            self.nodes[node.id] = view
            self._children.setdefault(node.parent_id, []).append(node.id)
        else:
            view.node = node
            if node.status is not NodeStatus.RETIRED:
                view.interrupted = False
        self._touch(view)
        return view

    def set_progress(self, node_id: str, progress: SessionProgress) -> None:
        view = self.nodes.get(node_id)
        if view is not None:
            reported = self._reported_costs.get(node_id)
            if reported is not None and reported > (progress.reported_cost or 0.0):
                progress.reported_cost = reported  # said on its stream, not yet in its file
            view.progress = progress
            self._touch(view)

    def report_cost(self, node_id: str, total: float) -> None:
        """The agent's own running total for its session, as its stream says it (Claude
        Code's `result`): kept over every later read of its file, which says it only
        when the process ends."""
        if total > self._reported_costs.get(node_id, 0.0):
            self._reported_costs[node_id] = total

    def set_streaming(self, node_id: str, segment: RateSegment | None) -> None:
        view = self.nodes.get(node_id)
        if view is not None and view.streaming != segment:
            view.streaming = segment
            self._touch(view)

    def set_terminal_line(self, node_id: str, line: str) -> None:
        view = self.nodes.get(node_id)
        if view is not None and view.terminal_line != line:
            view.terminal_line = line
            self._touch(view)

    def set_note(self, node_id: str, note: str | None) -> None:
        note = None if note is None else inert(note)  # notes quote agents' subjects
        view = self.nodes.get(node_id)
        if view is not None and view.note != note:
            view.note = note
            self._touch(view)

    def announce(self, node_id: str, text: str) -> None:
        """Something the user should hear of now (a completion notice to the host's root):
        the dashboard toasts each announcement once and the node's row says the last."""
        text = inert(text)  # a notice's subject names what an agent said
        self.announcements.append(text)
        self.announced += 1
        self.set_note(node_id, text)

    def add_event(self, event: Event) -> None:
        view = self.nodes.get(event.node_id or "")
        if view is not None:
            view.events.append(event)
            self._touch(view)

    def set_mail(self, node_id: str, stats: MailboxStats, messages: list[Message]) -> None:
        view = self.nodes.get(node_id)
        if view is not None:
            view.mail = stats
            view.messages.clear()
            view.messages.extend(messages)
            self._touch(view)

    def mark_interrupted(self, node_id: str, interrupted: bool = True) -> None:
        view = self.nodes.get(node_id)
        if view is not None:
            view.interrupted = interrupted
            self._touch(view)

    def mark_released(self, node_id: str, released: bool = True) -> None:
        view = self.nodes.get(node_id)
        if view is not None and view.released != released:
            view.released = released
            self._touch(view)

    def interrupted(self) -> list[NodeView]:
        return [v for v in self.nodes.values() if v.interrupted]

    # ----- change signal -------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _touch(self, view: NodeView) -> None:
        view.revision += 1
        self.version += 1
        self._dirty.add(view.node.id)
        if self._flush_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no loop (plain scripts, sync tests): tell listeners at once
            return
        self._flush_scheduled = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Deliver the pending dirty set to every listener, once."""
        self._flush_scheduled = False
        if not self._dirty:
            return
        dirty = frozenset(self._dirty)
        self._dirty.clear()
        # What `dirty` covers: a listener may change the model while it is told (its
        # change is in the next flush), so `version` may move on during the loop below.
        self.flushed_version = self.version
        for listener in list(self._listeners):
            listener(dirty)
