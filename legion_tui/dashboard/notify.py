"""Telling the user when the legion needs them (issue 12 item 5).

`Notifier` watches the model and decides, once per occurrence, what is worth a
notification: an agent that asks its user something (BLOCKED, each `node_blocked`), an
agent that fails, a team (a node with members) that ends done or failed, a node stuck
≥ `receipts.STALL_SECONDS` in one tool call. What is already there when the dashboard
starts is history, not news. `Alerts` says it three ways, each muted by `[notify]` in
.legion/settings.toml: a toast, the terminal bell, and a desktop notification — OSC 9
(iTerm2, kitty, WezTerm, Windows Terminal…) and OSC 777 (`notify;title;body`: rxvt,
foot, Ghostty, VTE) written through the app's driver; inside tmux each is wrapped for
tmux's passthrough (`allow-passthrough on`), which hands it to the outer terminal.

The endings of root's own children are toasted already as completion notices
(`model.announce`; `Announcements` hands the app each one once): for those, no second
toast — the bell and the desktop notification still sound.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from legion_tui import receipts
from legion_tui.model import EventType, NodeStatus
from legion_tui.render.feed import ChangeFeed
from legion_tui.settings import DEFAULT_SETTINGS, Settings, load_settings
from legion_tui.state import LegionModel, NodeView

__all__ = ["Alerts", "Announcements", "Notice", "Notifier", "desktop_sequences", "settings_near"]

TITLE = "legion"
REMIND_SECONDS = 300.0  # an unanswered question is told once more after this long
Severity = Literal["information", "warning", "error"]  # Textual's toast levels
_CONTROL = dict.fromkeys(range(0x20), " ") | {0x7F: " ", 0x9C: " ", 0x1B: " "}


@dataclass(frozen=True, slots=True)
class Notice:
    text: str
    severity: Severity
    toast: bool = True  # False: the completion notice toasts it already


def settings_near(run_dir: Path | None) -> Settings:
    """The project's settings, for a run folder in its `.legion/runs` (else defaults)."""
    runs = run_dir.parent if run_dir is not None else None
    if runs is None or runs.name != "runs" or runs.parent.name != ".legion":
        return DEFAULT_SETTINGS
    return load_settings(runs.parent.parent).settings


def _key(kind: str, view: NodeView, detail: object) -> tuple[str, str, str]:
    return (view.node.id, kind, str(detail))


def _waits(view: NodeView) -> bool:
    """A live node that may become worth telling with the clock alone: a tool call
    grows stuck, and a question unanswered is told again."""
    node = view.node
    return node.status.live and (bool(view.progress.in_flight)
                                 or node.status is NodeStatus.BLOCKED)


class Notifier:
    """What changed in the model since the last look that the user should hear of.

    Asked every frame: each look re-reads the nodes that changed since the last one and
    the live ones (a tool call grows stuck with the clock alone), not every node — what
    a node is worth telling depends on that node, its having members (a new node makes
    the next look a whole walk) and the time. The order is the model's, as a whole walk
    would find them."""

    def __init__(self, model: LegionModel) -> None:
        self._model = model
        self._told: set[tuple[str, str, str]] = set()
        self._feed = ChangeFeed(model)
        self._order: dict[str, int] = {}  # node id → its place in the model
        # The live nodes that may grow worth telling with the clock alone (see `_waits`),
        # kept from the changed ids: a walk over every live node at each look was a
        # twentieth of a 1 000-agent host's Python time (issue 35).
        self._waiting: set[str] = set()
        for key, _notice in self._occurrences(model.clock(), model.nodes.values()):
            self._told.add(key)  # history: already there when the dashboard started

    def news(self, now: float) -> list[Notice]:
        fresh: list[Notice] = []
        for key, notice in self._occurrences(now, self._to_look_at()):
            if key not in self._told:
                self._told.add(key)
                fresh.append(notice)
        return fresh

    def _to_look_at(self) -> Iterable[NodeView]:
        nodes = self._model.nodes
        changed = self._feed.take()
        if changed is None or len(nodes) != len(self._order):
            self._order = {nid: i for i, nid in enumerate(nodes)}
            self._waiting = {nid for nid, view in nodes.items() if _waits(view)}
            return nodes.values()
        ids = {nid for nid in changed if nid in nodes}
        for nid in ids:  # what a node is worth watching for changes only with the node
            if _waits(nodes[nid]):
                self._waiting.add(nid)
            else:
                self._waiting.discard(nid)
        ids.update(self._waiting)
        return [nodes[nid] for nid in sorted(ids, key=self._order.__getitem__)]

    def _occurrences(
        self, now: float, views: Iterable[NodeView]
    ) -> list[tuple[tuple[str, str, str], Notice]]:
        found = []
        root = self._model.root_id
        for view in views:
            node = view.node
            if node.id == root:
                continue
            if node.live and node.status is not NodeStatus.BLOCKED:
                # At work: only a tool call grown stuck is worth telling (a live node has
                # not failed nor settled) — nothing, for most of them, each frame.
                if view.progress.in_flight:
                    stuck = self._stuck(view, now)
                    if stuck is not None:
                        found.append(stuck)
                continue
            by_root = node.parent_id == root  # its ending is a completion notice already
            team = bool(self._model.children(node.id))
            outcome = node.outcome
            if node.status is NodeStatus.BLOCKED:
                asked = [e for e in view.events if e.type is EventType.NODE_BLOCKED]
                if asked:
                    question = asked[-1].data.get("question") or "input"
                    found.append((_key("blocked", view, asked[-1].id),
                                  Notice(f"{node.name} needs you: {question}", "warning")))
                    # Its tool call waits on the answer: not "stuck" (nothing to abort)
                    # but a question unanswered, told once more.
                    waited = now - asked[-1].at
                    if waited >= REMIND_SECONDS:
                        minutes = int(waited // 60)
                        found.append((_key("reminded", view, asked[-1].id), Notice(
                            f"{node.name} still needs you ({minutes} min): {question}",
                            "warning")))  # fmt: skip
            if outcome is NodeStatus.FAILED:
                what = f"team {node.name} failed" if team else f"{node.name} failed"
                why = f": {node.error}" if node.error else ""
                found.append((_key("failed", view, node.updated_at),
                              Notice(what + why, "error", toast=not by_root)))
            elif team and outcome is NodeStatus.SETTLED:
                found.append((_key("done", view, node.updated_at),
                              Notice(f"team {node.name} done", "information",
                                     toast=not by_root)))
        return found

    @staticmethod
    def _stuck(view: NodeView, now: float) -> tuple[tuple[str, str, str], Notice] | None:
        """The notice of a live node's open tool call once it has run long enough."""
        node, top = view.node, view.progress.in_flight[-1]
        secs = now - max(top.started_at, node.created_at)
        if secs < receipts.STALL_SECONDS:
            return None
        return (_key("stuck", view, (top.name, top.started_at)),
                Notice(receipts.stall_marker(node.name, top.name, secs), "warning"))


def _clean(text: str) -> str:
    """No control character may end the sequence early or start another."""
    return text.translate(_CONTROL).replace(";", ",")


def desktop_sequences(text: str, *, tmux: bool) -> str:
    """OSC 9 and OSC 777 carrying `text`; in tmux wrapped for its passthrough."""
    body = _clean(text)
    sequences = [f"\x1b]9;{body}\x07", f"\x1b]777;notify;{TITLE};{body}\x07"]
    if tmux:  # DCS tmux; <ESC doubled> ST
        sequences = ["\x1bPtmux;" + s.replace("\x1b", "\x1b\x1b") + "\x1b\\" for s in sequences]
    return "".join(sequences)


class Alerts:
    """Says each notice as the settings allow: toast, bell, desktop notification."""

    def __init__(
        self,
        settings: Settings,
        *,
        toast: Callable[[Notice], None],
        bell: Callable[[], None],
        write: Callable[[str], None],
    ) -> None:
        self._settings = settings
        self._toast = toast
        self._bell = bell
        self._write = write
        self._tmux = bool(os.environ.get("TMUX"))

    def say(self, notices: list[Notice]) -> None:
        if not notices:
            return
        settings = self._settings
        if settings.notify_toast:
            for notice in notices:
                if notice.toast:
                    self._toast(notice)
        if settings.notify_bell:
            self._bell()  # once for a batch: a burst of endings is one ring
        if settings.notify_desktop:
            self._write("".join(desktop_sequences(n.text, tmux=self._tmux) for n in notices))


class Announcements:
    """Each announcement (a completion notice to the root: the user) once. The model
    keeps the newest few and counts every one it made: those made since the last look
    are news; what was there when the dashboard started is history."""

    def __init__(self, model: LegionModel) -> None:
        self._model = model
        self._seen = model.announced  # how many were made before the last look

    def fresh(self) -> list[str]:
        """The announcements made since the last call, oldest first."""
        made = self._model.announcements
        fresh = min(self._model.announced - self._seen, len(made))
        self._seen = self._model.announced
        return list(made)[len(made) - fresh :]
