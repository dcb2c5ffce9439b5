"""The detail overlay (SPEC §7.2): a modal 75 % × 65 % over the main screen, centred.

The modal's own background stays the page colour (dark/light) so the gutters beside the
frame never fall back to the terminal's default background (upstream page-floor-v1).
Keys x/X/a/s/r act on the node this overlay shows: they call back into the app, which
owns the one confirm/steer flow. `m` in the Diff tab opens the same message box with a
review comment, to the agent that holds the worktree (a team member's lead).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from legion_tui.git.review import Review, review
from legion_tui.ops import Workspace
from legion_tui.runs.folder import terminal_log
from legion_tui.state import Clock, LegionModel, NodeView
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.keys import agent_bindings
from legion_tui.widgets.modal import Modal
from legion_tui.widgets.overlay.detail_text import (
    activity_lines,
    event_lines,
    footer_text,
    overlay_head,
    skipped_line,
    stall_line,
)
from legion_tui.widgets.overlay.diff_view import DiffView, branch_note
from legion_tui.widgets.overlay.letters import Letters
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import MessageHistory
from legion_tui.widgets.overlay.terminal_view import TerminalTab, TerminalView
from legion_tui.widgets.overlay.transcript_view import RAW_KEY, TranscriptView
from legion_tui.widgets.paint import paint_for


class DetailScreen(Modal[None]):
    DEFAULT_CSS = """
    DetailScreen { align: center middle; }
    DetailScreen #detail-frame {
        width: 75%; height: 65%;
        border: round $primary; background: $background;
    }
    DetailScreen #detail-head { height: 1; color: $primary; text-style: bold; }
    DetailScreen #detail-skipped { height: 1; color: $text-muted; }
    DetailScreen #detail-footer { height: 1; color: $text-muted; }
    DetailScreen TabbedContent { height: 1fr; }
    DetailScreen TabPane { height: 1fr; padding: 0; }
    DetailScreen .detail-text { height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
        Binding("L", "app.land_node", "Land"),
        Binding("n", "app.new_agent", "New agent"),
        *agent_bindings("app."),  # they act on this overlay's agent (App._target)
        # 1–6 pick a tab, [ and ] step through them (the footer says so).
        *(Binding(str(i + 1), f"tab({i})", show=False) for i in range(6)),
        Binding("left_square_bracket", "tab_step(-1)", show=False),
        Binding("right_square_bracket", "tab_step(1)", show=False),
        Binding("w", "wrap", "Wrap", show=False),
        # The transcript's every line (internal records too), or the conversation only.
        Binding(RAW_KEY, "raw", "All lines", show=False),
        Binding("i", "insert", "Type into the command", show=False),
        # The app's own `t`: a modal screen passes none of the app's bindings on.
        Binding("t", "app.cycle_theme", "Theme", show=False),
    ]

    def __init__(
        self,
        model: LegionModel,
        node_id: str,
        *,
        clock: Clock,
        floor: bool,
        run_dir: Path | None,
        workspace: Workspace | None = None,
        history: MessageHistory | None = None,
        terminal_input: Callable[[str, bytes], bool] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.node_id = node_id
        self.clock = clock
        self.floor = floor
        self.run_dir = run_dir
        self._shown: dict[str, str | Text] = {}  # what each Static shows now
        # Mounted and not closing: only then do updates and keys reach its widgets.
        self.showing = False
        self._dismissed = False
        self._built = {"tab-transcript", "tab-diff"}  # tabs whose content is (being) mounted
        # The message box (s): its history is the app's, shared with the tree's box.
        self.steer_line = MessageBox(history or MessageHistory(None), id="detail-steer")
        self.confirm_bar = ConfirmBar(floor=floor, id="detail-confirm")
        self.workspace = workspace  # its git worktree: a Diff tab, its branch in the header
        self._branch = ""  # ` · branch @ sha` once the worktree has been read
        self.terminal_input = terminal_input  # keys to an exec child's pty (the host's)

    def _session_path(self) -> Path | None:
        raw = self.model.nodes[self.node_id].node.session_file
        if not raw:
            return None
        path = Path(raw)
        if not path.is_absolute() and self.run_dir is not None:
            path = self.run_dir / path
        return path

    def _terminal_path(self) -> Path | None:
        if self.run_dir is None:
            return None
        path = terminal_log(self.run_dir, self.node_id)
        view = self.model.nodes[self.node_id]
        return path if view.node.backend == "process" or path.exists() else None

    def compose(self) -> ComposeResult:
        view = self.model.nodes[self.node_id]
        # Held, not queried: an update can never look for a widget that is not there.
        self._texts = {
            "head": Static(self._header(view), id="detail-head", markup=False),
            "skipped": Static(skipped_line(view), id="detail-skipped", markup=False),
            "activity": Static(id="activity", classes="detail-text", markup=False),
            "events": Static(id="events", classes="detail-text", markup=False),
        }
        self._letters = Letters(self._name_of, id="mail")
        self._transcript_view = TranscriptView(self._session_path(), id="transcript")
        log = self._terminal_path()
        self._terminal_view = (
            None
            if log is None
            else TerminalView(log, send=self._send_keys(), id="terminal")
        )
        self._diff_view = None
        if self.workspace is not None:
            tree = self.workspace.tree
            self._diff_view = DiffView(
                lambda: review(tree),
                owner=self.workspace.owner_id == self.node_id,
                id="diff",
            )
            self._diff_view.on_review = self._reviewed
        with Vertical(id="detail-frame"):
            yield self._texts["head"]
            yield self._texts["skipped"]
            with TabbedContent(id="detail-tabs") as self._tabs:
                with TabPane("Transcript", id="tab-transcript"):
                    yield self._transcript_view
                # Only the shown tab's content is composed now; a hidden tab's is mounted
                # when it is first shown (`_build`): composing the four of them was ~15 %
                # of Enter's time to the first frame, for tabs most openings never show.
                yield TabPane("Activity", id="tab-activity")
                yield TabPane("Mail", id="tab-mail")
                yield TabPane("Events", id="tab-events")
                if self._terminal_view is not None:
                    yield TabPane("Terminal", id="tab-terminal")
                # The Diff tab's view is composed now: its first read (a worker, from
                # on_mount) names the branch in the header.
                if self._diff_view is not None:
                    with TabPane("Diff", id="tab-diff"):
                        yield self._diff_view
            yield self._footer()
            yield self.steer_line
            yield self.confirm_bar

    def on_mount(self) -> None:
        if self._dismissed:
            return  # closed before it was ever shown (Esc right after o)
        self.showing = True
        self.model_changed(frozenset({self.node_id}))
        self._transcript_view.focus()
        if self._diff_view is not None:
            self._diff_view.reload()  # the branch and head for the header

    def _content_of(self, pane_id: str) -> Widget | None:
        """What a tab built on its first showing holds (None: composed with the overlay)."""
        if pane_id == "tab-activity":
            return VerticalScroll(self._texts["activity"])
        if pane_id == "tab-mail":
            return self._letters
        if pane_id == "tab-events":
            return VerticalScroll(self._texts["events"])
        if pane_id == "tab-terminal" and self._terminal_view is not None:
            return TerminalTab(self._terminal_view)
        return None

    async def _build(self, pane: TabPane) -> None:
        """Mount a tab's content the first time it is shown. Its texts were kept up to
        date meanwhile (a Static takes an update unmounted); the letters are shown now."""
        pane_id = pane.id or ""
        if pane_id in self._built:
            return
        self._built.add(pane_id)
        content = self._content_of(pane_id)
        if content is None:
            return
        await pane.mount(content)
        if pane_id == "tab-mail" and self.showing:
            self._letters.show(self.model.nodes[self.node_id])

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        await self._build(event.pane)
        if event.pane.id != self._tabs.active:
            return  # another tab was picked while this one was being built
        # The worktree changes as its agent works: the tab reads it again when shown.
        if self._diff_view is not None and event.pane.id == "tab-diff":
            self._diff_view.reload()
        # Keys follow the eye: the shown tab's own widget takes the focus (↑/↓ pick a
        # letter on the Mail tab, scroll the Transcript or the Diff). Focus left in a
        # hidden pane would pull its tab back to the front (Textual activates the pane
        # of a focused widget).
        shown = next((w for w in event.pane.query("*") if w.focusable), None)
        if shown is not None and not shown.has_focus:
            shown.focus()

    def _reviewed(self, seen: Review) -> None:
        self._branch = " · " + branch_note(seen)
        if self.showing:
            self._show("head", self._header(self.model.nodes[self.node_id]))

    def on_unmount(self) -> None:
        self.showing = False

    def on_screen_suspend(self) -> None:
        # Something opened over the overlay (the palette): its stop prompt is out of sight.
        self.confirm_bar.cancel()

    def prompts(self) -> tuple[ConfirmBar, MessageBox] | None:
        """The overlay's confirm bar and message box, or None while it cannot ask: a key
        that reaches it before it is composed (or while it closes) is dropped."""
        return (self.confirm_bar, self.steer_line) if self.showing else None

    def on_diff_view_comment(self, event: DiffView.Comment) -> None:
        """m in the Diff tab: the message box, prefilled, to the worktree's holder — the
        agent that made the change and will make the next one (the app's route sends it
        as a steer while it works, a follow-up once it is idle)."""
        event.stop()
        holder = None if self.workspace is None else self.model.nodes.get(self.workspace.owner_id)
        if self.showing and holder is not None:
            self.steer_line.ask(holder, text=event.text)

    def _follow_worktree(self, dirty: frozenset[str]) -> None:
        """The Diff tab reads the worktree again when an agent working in it moved on
        (its status, or a new entry in its session: a tool call that committed) — never
        per streamed token, and only while the tab is shown."""
        if self._diff_view is None or self.workspace is None:
            return
        ids = (self.node_id, self.workspace.owner_id)
        if dirty.isdisjoint(ids):
            return
        views = [self.model.nodes.get(i) for i in ids]
        seen = tuple((v.node.status, v.progress.entries) for v in views if v is not None)
        self._diff_view.follow(seen, shown=self._tabs.active == "tab-diff")

    def model_changed(self, dirty: frozenset[str]) -> None:
        # The app's feed can reach the overlay in the instant between its push and its
        # compose, and between its close and its removal: those updates are dropped (the
        # next one after mount repaints everything anyway).
        if not self.showing:
            return
        self._follow_worktree(dirty)
        if self.node_id not in dirty:
            return
        view = self.model.nodes[self.node_id]
        now = self.clock()
        self._show("head", self._header(view, now))
        self._show("skipped", skipped_line(view))
        activity = Text("\n".join(activity_lines(view, now)))
        stall = stall_line(view, now)
        if stall is not None:
            # the stall marker in the warning colour, as in the tree
            activity.highlight_words([stall], style=paint_for(self.app.theme).warning)
        self._show("activity", activity)
        if self._letters.is_mounted:  # else shown once its tab is built (`_build`)
            self._letters.show(view)
        self._show("events", "\n".join(event_lines(view, self._name_of)))
        # The tabs that show files follow them: a changed node may have written more.
        self._transcript_view.refresh_tail()
        if self._terminal_view is not None and self._terminal_view.is_mounted:
            self._terminal_view.refresh_log()

    def _header(self, view: NodeView, now: float | None = None) -> str:
        """The head line cut to the frame (75 % of the screen, inside its border)."""
        width = max(20, self.app.size.width * 3 // 4 - 2)
        at = self.clock() if now is None else now
        return overlay_head(view, at, width, self._branch)

    def _name_of(self, node_id: str) -> str:
        view = self.model.nodes.get(node_id)
        return view.node.name if view is not None else node_id

    def _footer(self) -> Static:
        """The overlay's own keys under its tabs (its frame: 75 % of the screen)."""
        self._tab_ids = ["tab-transcript", "tab-activity", "tab-mail", "tab-events"]
        self._tab_ids += ["tab-terminal"] if self._terminal_view is not None else []
        self._tab_ids += ["tab-diff"] if self._diff_view is not None else []
        width = max(20, self.app.size.width * 3 // 4 - 2)
        return Static(footer_text(width, len(self._tab_ids)), id="detail-footer", markup=False)

    def _send_keys(self) -> Callable[[bytes], bool] | None:
        keys = self.terminal_input
        return None if keys is None else partial(keys, self.node_id)

    def action_insert(self) -> None:
        """i on the Terminal tab: type into the running command (Ctrl+] leaves)."""
        view = self._terminal_view
        if (self.showing and view is not None and self._tabs.active == "tab-terminal"
                and view.is_attached):  # fmt: skip
            view.enter_insert()

    def action_wrap(self) -> None:
        """w: the transcript's long entries on as many rows as they need, or cut."""
        if self.showing:
            self._transcript_view.toggle_wrap()

    def action_raw(self) -> None:
        """v: the transcript's every line (the agent's own records too), or again the
        conversation only."""
        if self.showing:
            self._transcript_view.toggle_raw()

    def action_tab(self, index: int) -> None:
        if self.showing and 0 <= index < len(self._tab_ids):
            self._switch(self._tab_ids[index])

    def action_tab_step(self, step: int) -> None:
        if not self.showing:
            return
        ids = self._tab_ids
        at = ids.index(self._tabs.active) if self._tabs.active in ids else 0
        self._switch(ids[(at + step) % len(ids)])

    def _switch(self, tab_id: str) -> None:
        # The focus leaves the shown pane first: a focused widget that is hidden hands the
        # focus to a sibling in its own (hidden) pane, which would bring that tab back.
        self.set_focus(None)
        self._tabs.active = tab_id

    def _show(self, name: str, content: str | Text) -> None:
        """Update a Static only when what it shows changed: every update is a layout
        pass, and a streaming node changes many times a second."""
        if self._shown.get(name) == content:
            return
        self._shown[name] = content
        self._texts[name].update(content)

    def action_close(self) -> None:
        if self._dismissed:
            return  # a second Esc in the same instant: the first one closes it
        self._dismissed = True
        self.showing = False
        self.dismiss(None)
