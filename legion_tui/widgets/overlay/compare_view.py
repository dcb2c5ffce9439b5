"""The compare view of a fan-out (issue 34 item 4): Enter on an attempt group's row.

One column per attempt — kind and model, status, verdict, checks, its change, commits,
tokens, cost, time — then the diff of one file as each attempt changed it, side by side
(one after the other when the screen is too narrow for a column each). ←/→ pick the
attempt the keys act on (its column is lit), ↑/↓ the file; Enter opens its detail; L and
c land or commit it through the same confirms as everywhere (the app's `landing`), and D
discards the other attempts in one confirm that names what each would lose (R reads the
worktrees again after it). What it shows is read by a loader (git, in a worker) when it opens and
again when an attempt's status or checks move — never per streamed token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from legion_tui.fanout.compare import FIELDS, Attempt
from legion_tui.fanout.group import AttemptGroup, group_state
from legion_tui.model import EventType
from legion_tui.state import LegionModel
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.modal import Modal
from legion_tui.widgets.overlay.diff_view import diff_lines
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import MessageHistory
from legion_tui.widgets.paint import paint_for

__all__ = ["CompareScreen", "file_diffs", "files_of"]

PANE_MIN = 32  # cells a side-by-side diff column needs; narrower, they are stacked
FOOTER = ("Esc close · ←/→ attempt · ↑/↓ file · PgUp/PgDn · ⏎ detail · L land · c commit · "
          "D discard the others · R read again")  # fmt: skip

Loader = Callable[[], Awaitable[list[Attempt]]]


class _Pane(VerticalScroll, can_focus=False):
    """A diff column: the screen's keys (←/→ attempt, ↑/↓ file) are never its scroll
    keys; PgUp/PgDn scroll every pane together."""


def files_of(attempts: Sequence[Attempt]) -> list[str]:
    """Every file any attempt changed, in the order they first appear."""
    seen: dict[str, None] = {}
    for attempt in attempts:
        for change in attempt.review.files if attempt.review else ():
            seen.setdefault(change.path, None)
    return list(seen)


def file_diffs(diff: str) -> dict[str, list[str]]:
    """A unified diff split per file (`diff --git a/P b/P` starts one), keyed by path."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in diff_lines(diff):
        if line.startswith("diff --git "):
            head = line[len("diff --git ") :]
            path = head.partition(" b/")[2] or head.removeprefix("a/")
            if path.startswith("/dev/null"):  # a new file diffed against /dev/null
                path = head.partition(" ")[0].removeprefix("a/")
            current = out.setdefault(path, [])
        if current is not None:
            current.append(line)
    return out


class CompareScreen(Modal[None]):
    DEFAULT_CSS = """
    CompareScreen { align: center middle; }
    CompareScreen #compare-frame {
        width: 92%; height: 88%;
        border: round $primary; background: $background;
    }
    CompareScreen #compare-head { height: 1; color: $primary; text-style: bold; }
    CompareScreen #compare-table { height: auto; }
    CompareScreen #compare-file { height: 1; color: $text-muted; }
    CompareScreen #compare-diffs { height: 1fr; }
    CompareScreen .compare-pane { width: 1fr; height: 1fr; border-left: vkey $panel; }
    CompareScreen .compare-pane Static { text-wrap: nowrap; text-overflow: ellipsis; }
    CompareScreen #compare-footer { height: 1; color: $text-muted; }
    """

    # No widget takes the focus: every key here is the screen's (its panes scroll by
    # PgUp/PgDn, its prompts focus themselves when they ask).
    AUTO_FOCUS = ""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close"),
        Binding("left,h", "attempt(-1)", "Attempt", show=False),
        Binding("right,l", "attempt(1)", "Attempt", show=False),
        Binding("up,k", "file(-1)", "File", show=False),
        Binding("down,j", "file(1)", "File", show=False),
        Binding("pageup", "scroll_diffs(-1)", show=False),
        Binding("pagedown", "scroll_diffs(1)", show=False),
        Binding("enter,o", "open", "Detail"),
        Binding("L", "app.land_node", "Land"),
        Binding("c", "app.commit_node", "Commit"),
        Binding("D", "app.discard_others", "Discard the others"),
        Binding("R", "reload", "Read again", show=False),
        Binding("t", "app.cycle_theme", "Theme", show=False),
    ]

    def __init__(
        self,
        model: LegionModel,
        group: AttemptGroup,
        load: Loader,
        *,
        floor: bool,
        history: MessageHistory | None = None,
        open_detail: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.group = group
        self._load = load
        self._open_detail = open_detail
        self.attempts: list[Attempt] = []
        self.files: list[str] = []
        self.column = 0  # the attempt the keys act on
        self.file = 0
        self.showing = False
        self._seen: object = None  # the attempts' statuses and checks last loaded for
        self.steer_line = MessageBox(history or MessageHistory(None), id="compare-steer")
        self.confirm_bar = ConfirmBar(floor=floor, id="compare-confirm")

    @property
    def node_id(self) -> str:
        """The highlighted attempt: the node L, c and Enter act on (D keeps it)."""
        return self.group.attempt_ids[self.column]

    def compose(self) -> ComposeResult:
        self._head = Static(id="compare-head", markup=False)
        self._table = Static(id="compare-table", markup=False)
        self._file_line = Static(id="compare-file", markup=False)
        self._diffs = Horizontal(id="compare-diffs")
        with Vertical(id="compare-frame"):
            yield self._head
            yield self._table
            yield self._file_line
            yield self._diffs
            yield Static(FOOTER, id="compare-footer", markup=False)
            yield self.steer_line
            yield self.confirm_bar

    def on_mount(self) -> None:
        self.showing = True
        self._show()
        self._reload()

    def on_unmount(self) -> None:
        self.showing = False

    def on_screen_suspend(self) -> None:
        self.confirm_bar.cancel()

    def prompts(self) -> tuple[ConfirmBar, MessageBox] | None:
        return (self.confirm_bar, self.steer_line) if self.showing else None

    # ----- data ------------------------------------------------------------------------
    def _moved(self) -> object:
        views = [self.model.nodes[a] for a in self.group.attempt_ids]
        return tuple((v.node.status, v.last(EventType.CHECKS)) for v in views)

    def model_changed(self, dirty: frozenset[str]) -> None:
        """Read again once an attempt's status or checks moved."""
        if self.showing and not dirty.isdisjoint(self.group.attempt_ids) and (
            self._moved() != self._seen
        ):
            self._reload()

    def _reload(self) -> None:
        self._seen = self._moved()
        self.run_worker(self._read(), group="compare", exclusive=True)

    async def _read(self) -> None:
        attempts = await self._load()
        if not self.showing:
            return
        self.attempts = attempts
        self.files = files_of(attempts)
        self.file = min(self.file, max(0, len(self.files) - 1))
        self._show()

    # ----- drawing -----------------------------------------------------------------------
    def _show(self) -> None:
        views = [self.model.nodes[a] for a in self.group.attempt_ids]
        task = views[0].node.task.strip().splitlines()[0] if views[0].node.task.strip() else ""
        state = group_state(views)
        self._head.update(f"compare · {self.group.name} · {state.text.split(' · Enter')[0]}"
                          + (f" · {task}" if task else ""))  # fmt: skip
        self._table.update(self._table_renderable())
        if not self.files:
            note = "reading the worktrees…" if not self.attempts else "no attempt changed a file"
            self._file_line.update(note)
        else:
            path = self.files[self.file]
            self._file_line.update(f"file {self.file + 1} of {len(self.files)}: {path}")
        self._show_diffs()

    def _table_renderable(self) -> Table:
        paint = paint_for(self.app.theme)
        table = Table(box=None, padding=(0, 1), expand=True, show_edge=False)
        table.add_column("", style=paint.dim, no_wrap=True)
        names = {a.node_id: a for a in self.attempts}
        for i, node_id in enumerate(self.group.attempt_ids):
            attempt = names.get(node_id)
            name = attempt.name if attempt else self.model.nodes[node_id].node.name
            lit = i == self.column
            table.add_column(("▸ " if lit else "  ") + name,
                             header_style=paint.accent if lit else paint.dim,
                             overflow="ellipsis", no_wrap=True)  # fmt: skip
        for label, value in FIELDS:
            cells = [value(names[a]) if a in names else "…" for a in self.group.attempt_ids]
            table.add_row(label, *[self._tone(label, cell) for cell in cells])
        return table

    def _tone(self, label: str, cell: str) -> Text:
        paint = paint_for(self.app.theme)
        if label in ("verdict", "checks") and cell.startswith("✓"):
            return Text(cell, style=paint.ok)
        if label in ("verdict", "checks") and cell.startswith("✗"):
            return Text(cell, style=paint.fail)
        return Text(cell)

    def _diff_text(self, index: int, attempt: Attempt | None, path: str | None) -> Text:
        """One attempt's diff of `path`: its name (lit when the keys act on it), then its
        hunks — the file's header lines are the file line's, above every pane."""
        paint = paint_for(self.app.theme)
        node_id = self.group.attempt_ids[index]
        name = attempt.name if attempt else self.model.nodes[node_id].node.name
        lit = index == self.column
        text = Text(("▸ " if lit else "  ") + name + "\n", style=paint.accent if lit else paint.dim,
                    no_wrap=True, overflow="ellipsis")  # fmt: skip
        if attempt is None or path is None:
            return text
        if attempt.review is None:
            text.append(attempt.problem or "no worktree", style=paint.dim)
            return text
        lines = file_diffs(attempt.review.diff).get(path)
        if lines is None:
            text.append("does not change this file", style=paint.dim)
            return text
        hunks = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
        for line in lines[hunks:]:
            style = (paint.ok if line.startswith("+") else paint.fail if line.startswith("-")
                     else paint.dim if line.startswith("@@") else None)  # fmt: skip
            text.append(line + "\n", style=style or "")
        return text

    def _show_diffs(self) -> None:
        path = self.files[self.file] if self.files else None
        names = {a.node_id: a for a in self.attempts}
        attempts = [names.get(a) for a in self.group.attempt_ids]
        texts = [self._diff_text(i, a, path) for i, a in enumerate(attempts)]
        self._diffs.remove_children()
        room = self.size.width * 92 // 100 - 2  # the frame's inside (its CSS width)
        if room < PANE_MIN * len(attempts):  # one after the other
            self._diffs.mount(_Pane(Static(Text("\n").join(texts)), classes="compare-pane"))
            return
        for text in texts:
            self._diffs.mount(_Pane(Static(text), classes="compare-pane"))

    # ----- keys ----------------------------------------------------------------------------
    def action_attempt(self, step: int) -> None:
        self.column = (self.column + step) % len(self.group.attempt_ids)
        self._show()

    def action_file(self, step: int) -> None:
        if self.files:
            self.file = (self.file + step) % len(self.files)
            self._show()

    def action_scroll_diffs(self, direction: int) -> None:
        for pane in self._diffs.query(_Pane):
            pane.scroll_relative(y=direction * max(1, pane.size.height - 1), animate=False)

    def action_open(self) -> None:
        if self._open_detail is not None:
            self._open_detail(self.node_id)

    def action_reload(self) -> None:
        self._reload()

    def action_close(self) -> None:
        self.showing = False
        self.dismiss(None)
