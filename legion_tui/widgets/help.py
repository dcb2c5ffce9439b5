"""`?`: every key of SPEC §7.3, the overlay's keys, the filter words and the glyphs, on one page."""

from __future__ import annotations

import textwrap
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from legion_tui.widgets.modal import Modal

KEYS: tuple[tuple[str, str], ...] = (
    ("↑ ↓ / j k", "select"),
    ("PgUp PgDn / Home End", "a page up or down / the first or last row"),
    ("← / h / -", "fold a subtree; on a folded or leaf row: go to its parent"),
    ("→ / l / +", "unfold"),
    ("Enter / o / double-click", "detail overlay (Esc or q closes); on a fan-out's row: compare"),
    ("x then y", "stop the selected agent and its subtree (any other key cancels)"),
    ("X then y", "force stop (no grace period)"),
    ("a then y", "abort the current turn (context kept; queued steering is dropped)"),
    ("s", "message box: a steer (running) or a follow-up (idle); Enter sends, Ctrl+J new line,"
          " ↑↓ history, the receipt under it (queued / accepted / delivered)"),
    ("A", "attach: the agent's own UI (pi, claude, codex) on its session; exit it and legion"
          " takes the agent back, idle and steerable (a turn under way is aborted, after y)"),
    ("r", "resume an interrupted or stopped agent"),
    ("R", "resume every interrupted agent, two at a time, leads before their members"),
    ("n", "new agent (under the selected lead, else under root)"),
    ("L", "land the selected agent's branch: the sha the prompt names (y; m merge/squash/"
          "rebase; c commits its leftovers first); a dirty checkout is stashed and put back"),
    ("c", "commit what the agent left uncommitted in its worktree (y; e edits the message)"),
    ("P", "push the agent's branch to your remote and open a PR where gh/glab is logged in"),
    ("D", "discard an ended agent's worktree and branch (the prompt names what is lost)"),
    ("/", "filter the tree by name, role or task (and :live, :failed…); Enter keeps, Esc clears"),
    ("w", "chart window: last 60 s / whole run"),
    ("g", "galaxy full screen"),
    ("t", "cycle theme (dark → light → ansi), kept in .legion/settings.toml"),
    ("p", "pause / resume screen updates"),
    ("Tab / Shift+Tab", "move the keyboard focus"),
    ("Ctrl+P", "command palette: Stop/Force stop/Abort/Resume NAME, /legion stop …"),
    ("?", "this help"),
    ("q / Ctrl+Q", "quit (asks first while agents are live: quitting pauses them)"),
    ("mouse", "click selects a row or a star; the wheel scrolls"),
)
# Inside the detail overlay, besides x X a s r n L c P D (they act on its agent) and t.
OVERLAY_KEYS: tuple[tuple[str, str], ...] = (
    ("1 … 6", "pick a tab (Transcript, Activity, Mail, Events, Terminal, Diff)"),
    ("[ / ]", "previous / next tab"),
    ("w", "wrap the transcript's long entries (the newest 2000), or cut them again"),
    ("v", "the transcript's every line — the agent's own records (attachments, events, "
          "usage) too — or the conversation only again"),
    ("i / Ctrl+]", "Terminal tab of a running command: type into it (-- INSERT --) / stop"),
    ("Esc / q", "close the overlay"),
)
FILTERS: tuple[tuple[str, str], ...] = (
    ("word", "a part of the name, role or path"),
    (":live", "starting, running or waiting"),
    (":waiting", "waiting for input (◆)"),
    (":stuck", "in one tool call for 5 minutes or more"),
    (":failed :settled :retired", "ended that way"),
    ("ui :live", "words combine: every one must match"),
)
GLYPHS: tuple[tuple[str, str], ...] = (
    ("● ◐ ◆", "running · starting · waiting for input (the header's ● counts all three)"),
    ("○", "settled (its verdict: ✓ ok, ✗ not ok)"),
    ("✗", "failed"),
    ("◌", "retired; 'stopped · r resumes' after your stop mid-run, 'interrupted' after an exit"),
    ("sim", "after a name: a simulated agent (its work and cost are pretend)"),
    ("galaxy", "one star per agent round its lead; brighter = more tok/s now"),
)
# Each figure with the window it is taken over (issue 32: a row's 5 tok/s beside a
# status's 20 read as a contradiction; they were two windows, neither named).
FIGURES: tuple[tuple[str, str], ...] = (
    ("tok/s", "now: output tokens of the last 10 s ÷ 10 — the rows, the header, the "
              "chart's now, the detail, legion status"),
    ("decode avg", "output tokens ÷ the seconds the model spent generating them, over the "
                   "whole session — the detail, legion status, legion inspect"),
    ("avg · peak", "the chart's, over its window: the last 60 s or the whole run (w)"),
    ("$", "the agent's own figure; est. from a price table; $? where no table knows the "
          "model; pretend for a simulated agent"),
)
SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("keys", KEYS),
    ("in the detail overlay", OVERLAY_KEYS),
    ("filter (/)", FILTERS),
    ("glyphs", GLYPHS),
    ("figures", FIGURES),
)


def help_text(width: int | None = None) -> str:
    """The keys and what they do; with `width`, each description wrapped under its own
    column (a line cut at the screen's edge lost the end of what the key does)."""
    keys = max(len(k) for _title, rows in SECTIONS for k, _ in rows)
    indent = " " * (2 + keys + 2)
    room = None if width is None else max(20, width - len(indent))

    def row(key: str, what: str) -> str:
        lines = [what] if room is None else textwrap.wrap(what, room) or [""]
        return f"  {key:<{keys}}  " + f"\n{indent}".join(lines)

    blocks = [f"{title}\n" + "\n".join(row(k, w) for k, w in rows) for title, rows in SECTIONS]
    return "\n\n".join(blocks)


class HelpScreen(Modal[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: auto; max-width: 90%; height: auto; max-height: 90%;
        border: round $primary; background: $background; padding: 0 1;
    }
    HelpScreen Static { width: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    _laid_for = 0  # the room its text was wrapped to

    def compose(self) -> ComposeResult:
        self._laid_for = self._room()
        with VerticalScroll():
            yield Static(help_text(self._laid_for), markup=False)

    def on_resize(self, event: events.Resize) -> None:
        # The first Resize comes from its own first layout: the text fits already.
        if self._room() != self._laid_for:
            self._laid_for = self._room()
            self.query_one(Static).update(help_text(self._laid_for))

    def _room(self) -> int:
        """The text's width: the box's 90 % of the screen, less its border, padding and
        the scrollbar it may need."""
        return int(self.app.size.width * 0.9) - 2 - 2 - 2

    def action_close(self) -> None:
        self.dismiss(None)
