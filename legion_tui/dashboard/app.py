"""LegionApp: the dashboard (SPEC §7) — it builds the parts, runs the change loop and
its timers, and hands each key to the part that owns it.

One main screen, mounted once. The model's coalesced change signal becomes ONE
replaceable message; the handler applies the accumulated dirty ids at most ~30 times a
second, and each widget repaints only what those ids touch. What a key asks of the
legion is the `Operator`'s (`operator.py`: the app is its `Surface`); how the main
screen's panels answer each other is `MainScreen`'s (`main_screen.py`); the themes are
`theming.py`'s. Tests build the app through `make_app` with a canned model, a fixed clock
and `timers=False` (deterministic frames), and read it through its public names.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, ClassVar

from textual import on
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import Notification, SeverityLevel
from textual.screen import Screen
from textual.scrollbar import ScrollBar
from textual.timer import Timer

from legion_tui import receipts
from legion_tui.dashboard.main_screen import MainScreen
from legion_tui.dashboard.notify import Alerts, Announcements, Notifier, settings_near
from legion_tui.dashboard.operator import Operator
from legion_tui.dashboard.terminal import SIGNAL_GRACE_S, LegionDriver
from legion_tui.dashboard.theming import (
    next_theme,
    offer_legion_themes,
    skip_ansi_filter,
    theme_kept,
)
from legion_tui.fanout.group import group_of_row
from legion_tui.inert import inert
from legion_tui.ops import Operations
from legion_tui.render.steps import DRAW_HZ
from legion_tui.state import Clock, LegionModel, NodeView
from legion_tui.themes import DEFAULT_THEME
from legion_tui.widgets.confirm import ConfirmBar, ConfirmRequest
from legion_tui.widgets.galaxy import GalaxyView
from legion_tui.widgets.header import HeaderBar
from legion_tui.widgets.help import HelpScreen
from legion_tui.widgets.keys import KeyHints, agent_bindings
from legion_tui.widgets.overlay.compare_view import CompareScreen
from legion_tui.widgets.overlay.detail import DetailScreen
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import MessageHistory
from legion_tui.widgets.palette import LegionCommands
from legion_tui.widgets.rate_chart import RateChart
from legion_tui.widgets.tree.header import TreeHeader
from legion_tui.widgets.tree.railway import RailwayTree, WholeCellScrollBar

MAX_APPLY_HZ = 30.0
GC_THRESHOLDS = (20_000, 50, 1000)


def tune_gc() -> None:
    """Keep garbage collection out of frame time (bench/bench_frame.py: p95 of a full
    200×60 frame ≈ 45 ms with CPython's defaults, ≈ 9 ms with this). Everything alive
    after start-up (Textual, the model, caches) is frozen out of the collector's scans,
    and young-generation collections run less often. Process-wide, so only the CLI's
    `running.run_dashboard_async` asks for it, never tests."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


# The overlays whose keys act on one agent (`node_id`) and ask on their own prompts.
AGENT_OVERLAYS = (DetailScreen, CompareScreen)


class ModelChanged(Message):
    """'Something changed': dirty ids accumulate on the app, so one pending copy of this
    message is enough and later ones replace it in the queue."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ModelChanged)


class LegionApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "legion"
    COMMANDS: ClassVar = App.COMMANDS | {LegionCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        *agent_bindings(),
        Binding("n", "new_agent", "New agent"),
        Binding("R", "resume_all", "Resume all", show=False),
        Binding("L", "land_node", "Land", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("w", "chart_window", "Window", show=False),
        Binding("g", "galaxy_full", "Galaxy"),
        Binding("t", "cycle_theme", "Theme", show=False),
        Binding("p", "pause", "Pause"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit_legion", "Quit"),
    ]

    def __init__(
        self,
        model: LegionModel,
        ops: Operations,
        *,
        clock: Clock | None = None,
        theme: str = DEFAULT_THEME,
        timers: bool = True,
        floor: bool = True,
        run_dir: Path | None = None,
        on_start: Callable[[LegionApp], Awaitable[None]] | None = None,
        gc_tuning: bool = False,
        hosts: bool = True,
    ) -> None:
        # Our driver: a terminal that closes, stalls or sends SIGCONT never blocks the loop
        # the supervisor shares (legion_tui.dashboard.terminal). Tests' headless runs are unchanged.
        # A driver named in TEXTUAL_DRIVER is Textual's choice as usual: textual-serve
        # names its WebDriver for the view it runs per browser (`legion serve`).
        super().__init__(driver_class=None if os.environ.get("TEXTUAL_DRIVER") else LegionDriver)
        # Every scrollbar's thumb in whole cells (Textual's documented class-wide switch):
        # its sub-cell ends (▁▂▅) read as chart bars beside the tok/s chart and the galaxy.
        ScrollBar.renderer = WholeCellScrollBar
        self.gc_tuning = gc_tuning
        # False: a view of a run another process hosts (legion_tui.dashboard.view); quitting it
        # pauses nothing, so it asks nothing.
        self.hosts = hosts
        self.model = model
        self.ops = ops
        self.clock: Clock = clock or model.clock
        self.timers = timers
        self.floor = floor
        self.run_dir = run_dir
        self.on_start = on_start
        # What on_start starts (the demo's legion) is on its way: "nothing started yet"
        # would be a second of false news.
        self.starting = on_start is not None
        self.paused = False
        self._pending: set[str] = set()
        self.announcements = Announcements(model)  # completion notices to the user
        self.notifier = Notifier(model)  # needs you, failures, teams ended, stalls
        self.alerts = Alerts(
            settings_near(run_dir),
            # Words with brackets in them (`[budget] usd`, an agent's `[y/N]`) are text:
            # Textual's markup ate them.
            toast=lambda n: self.notify(
                n.text, title="legion", severity=n.severity, timeout=10, markup=False
            ),
            bell=lambda: self._write_terminal("\a"),  # as App.bell, but not while attached
            write=self._write_terminal,
        )
        self._last_apply = 0.0
        self._apply_timer: Timer | None = None
        # The message box's, both screens'; a read-only view writes nothing anywhere.
        self.history = MessageHistory(run_dir, writable=not ops.read_only)
        self.theme_name = offer_legion_themes(self, theme)
        self.header = HeaderBar(model, floor=floor, id="header")
        self.railway = RailwayTree(model, clock=self.clock, floor=floor, id="tree")
        self.tree_header = TreeHeader(self.railway, id="tree-header")
        self.galaxy = GalaxyView(model, id="galaxy")
        self.chart = RateChart(model, id="chart")
        self.key_hints = KeyHints(floor=floor, id="keys")
        self.main_screen = MainScreen(self)
        # What the user asks of the legion: confirmed, run and answered there. `[land]
        # mode` is read at each L.
        self.operator = Operator(
            model, ops, self, land_mode=lambda: settings_near(run_dir).land_mode
        )
        if not floor:
            self.add_class("-no-floor")
        self._unsubscribe = model.subscribe(self._on_model_signal)

    # ----- lifecycle ---------------------------------------------------------------
    def get_default_screen(self) -> Screen[Any]:
        return self.main_screen

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        skip_ansi_filter(self)

    def main_mounted(self) -> None:
        """The main screen is composed and its panels wired: start the timers."""
        self.main_screen.update_banner(self.model.nodes)
        if self.timers:
            self.set_interval(1.0, self.second_tick)
            # The galaxy's and the chart's draw steps; orbits advance slowly: 4 frames a
            # second keep them moving for ≈ 1-2 % of a core, where 12 cost ≈ 4 % (measured
            # in a pty with 100 nodes at 160×50).
            self.set_interval(1.0 / DRAW_HZ, self.step_tick)
        if self.gc_tuning:
            tune_gc()  # after mount: the widgets and caches alive now are frozen
        if self.on_start is not None:
            self.run_worker(self._start(self.on_start), name="legion-start", exit_on_error=True)

    async def _start(self, on_start: Callable[[LegionApp], Awaitable[None]]) -> None:
        try:
            await on_start(self)
        finally:
            self.starting = False
            self.main_screen.update_banner(self.model.nodes)

    def on_unmount(self) -> None:
        self._unsubscribe()

    # ----- what tests read ------------------------------------------------------------
    @property
    def notifications(self) -> list[Notification]:
        """What the user is being told, oldest first: the toasts Textual still holds (it
        drops each as it expires)."""
        return list(self._notifications)

    @property
    def pending(self) -> frozenset[str]:
        """The ids whose change is not applied yet (paused, or inside the ~30 Hz bound)."""
        return frozenset(self._pending)

    @property
    def last_apply(self) -> float:
        """When changes were last applied (`time.monotonic()`; 0.0: never)."""
        return self._last_apply

    # ----- the data feed -----------------------------------------------------------
    def _on_model_signal(self, dirty: frozenset[str]) -> None:
        self._pending |= dirty
        self.post_message(ModelChanged())

    def on_model_changed(self, _message: ModelChanged) -> None:
        if self.paused or self._apply_timer is not None:
            return
        wait = self._last_apply + 1.0 / MAX_APPLY_HZ - time.monotonic()
        if wait > 0 and self.timers:
            self._apply_timer = self.set_timer(wait, self._apply_pending)
        else:
            self._apply_pending()

    def _apply_pending(self) -> None:
        self._apply_timer = None
        # Not while the app shuts down: its screens are being removed (with the pilot the
        # loop still runs then, and a streaming legion's update met an empty screen stack).
        if self.paused or not self._pending or not self.is_running:
            return
        dirty = frozenset(self._pending)
        self._pending.clear()
        self._last_apply = time.monotonic()
        with self.batch_update():
            self.main_screen.model_changed(self.model.nodes, dirty)
            if isinstance(self.screen, AGENT_OVERLAYS):
                self.screen.model_changed(dirty)
            for text in self.announcements.fresh():  # each once; root's row keeps the last
                self.notify(text, title="legion", timeout=8, markup=False)
            self.operator.follow_receipt(dirty)
        self.alerts.say(self.notifier.news(self.clock()))

    def second_tick(self) -> None:
        """Once a second: elapsed times and tool-call clocks move even when no file does
        (`MainScreen.second`, the overlay), and a tool call now 5 min long is told."""
        if isinstance(self._driver, LegionDriver):
            self._driver.check_terminal()  # a hangup no signal told us about ends the app
        if self.paused or not self.is_running:
            return
        self.main_screen.second()
        self.alerts.say(self.notifier.news(self.clock()))  # a tool call now 5 min long
        if isinstance(self.screen, DetailScreen):
            self.screen.model_changed(frozenset({self.screen.node_id}))

    def step_tick(self) -> None:
        """Each draw step: the main screen's galaxy and chart (`MainScreen.draw_step`)
        — never while the user has paused."""
        if not self.paused:
            self.main_screen.draw_step()

    def _write_terminal(self, text: str) -> None:
        """Straight to the terminal (a desktop notification's OSC), as `bell` writes —
        never while an attached agent UI has the terminal (the app is suspended: its
        driver has no writer, and the bytes would land in the agent's screen)."""
        attached = self.operator.attacher.attached
        if not self.is_headless and self._driver is not None and attached is None:
            self._driver.write(text)

    # ----- the operator's Surface: where keys act, ask, say and run -------------------
    def _target(self, *, quiet: bool = False) -> NodeView | None:
        """The node a key acts on: the overlay's node (the compare view's highlighted
        attempt), else the tree selection (on a fan-out's row, none: said unless
        `quiet`)."""
        if isinstance(self.screen, AGENT_OVERLAYS):
            return self.model.nodes.get(self.screen.node_id)
        view = self.railway.selected_view
        group = group_of_row(self.model, self.railway.selected_id or "")
        if view is None and group is not None and not quiet:  # an agent's key on a group
            self.say(f"{group.name} is a fan-out, not an agent: Enter compares its "
                     "attempts; select one of them to act on it.")  # fmt: skip
        return view

    def prompts(self) -> tuple[ConfirmBar, MessageBox] | None:
        """The confirm bar and message box of the screen on top, or None while it cannot
        ask: an overlay pushed this instant and not composed yet, one closing, help. A
        key meant for such a screen is dropped, never answered somewhere out of sight."""
        screen = self.screen
        if isinstance(screen, AGENT_OVERLAYS):
            return screen.prompts()
        if screen is self.main_screen and screen.is_mounted:
            return screen.confirm_bar, screen.steer_line
        return None

    def ask(self, request: ConfirmRequest) -> None:
        """On the confirm bar of the screen on top (dropped while none can ask)."""
        prompts = self.prompts()
        if prompts is not None:
            prompts[0].ask(request)

    def say(
        self,
        text: str,
        *,
        severity: SeverityLevel = "information",
        title: str = "",
        timeout: float | None = None,
    ) -> None:
        """A notification of literal text: receipts and errors may contain `[...]` and
        quote what agents said (made inert: legion_tui.inert)."""
        self.notify(inert(text), title=inert(title), severity=severity, timeout=timeout,
                    markup=False)  # fmt: skip

    def run_op(self, work: Coroutine[Any, Any, object], group: str = "ops") -> None:
        """An operation's work, beside the screen's (`Operator.run` shows its receipt)."""
        self.run_worker(work, group=group)

    def show(self, form: Screen[str | None], done: Callable[[str | None], None]) -> None:
        """A form over the screen (a new agent, a commit message); `done` gets its result."""
        self.push_screen(form, done)

    # ----- the keys: each handed to the part that owns it ---------------------------------
    def action_stop_node(self, force: bool = False) -> None:
        if (view := self._target()) is not None:
            self.operator.stop(view.node.id, force)

    def action_abort_node(self) -> None:
        if (view := self._target()) is not None:
            self.operator.abort(view.node.id)

    def action_resume_all(self) -> None:
        self.operator.resume_all()

    def action_resume_node(self) -> None:
        if (view := self._target()) is not None:
            self.operator.resume(view.node.id)

    def action_steer_node(self) -> None:
        view = self._target()
        prompts = self.prompts()
        if view is not None and prompts is not None:
            prompts[1].ask(view)

    @on(ConfirmBar.Answered)
    def _confirm_answered(self, event: ConfirmBar.Answered) -> None:
        self.operator.answered(event.request, event.confirmed, event.choice)

    @on(MessageBox.Submitted)
    def _message_submitted(self, event: MessageBox.Submitted) -> None:
        self.run_op(self.operator.steer(event.box, event.node_id, event.text))

    def action_land_node(self) -> None:
        if (view := self._target()) is not None:
            self.operator.landing.start(view.node.id)

    def action_commit_node(self) -> None:
        if (view := self._target()) is not None:
            self.operator.landing.start_commit(view.node.id)

    def action_push_node(self) -> None:
        if (view := self._target()) is not None:
            self.operator.landing.start_push(view.node.id)

    def action_discard_node(self) -> None:
        if (view := self._target()) is not None:
            self.operator.landing.start_discard(view.node.id)

    def action_discard_others(self) -> None:
        """D in the compare view: every attempt but the lit one, in one confirm."""
        screen = self.screen
        if isinstance(screen, CompareScreen):
            keep, group = screen.node_id, screen.group
            others = [a for a in group.attempt_ids if a != keep]
            self.operator.landing.start_discard_others(group.row_id, keep, others)

    def action_attach_node(self) -> None:
        """A: the agent's own UI on its session, the dashboard suspended meanwhile."""
        if (view := self._target()) is not None and view.node.role != "root":
            self.operator.attacher.start(view.node.id)

    def action_new_agent(self) -> None:
        start = self.screen
        if start is self.main_screen or isinstance(start, DetailScreen):  # not over a form
            self.operator.new_agent(self._target(quiet=True), lambda: self.screen is start)

    palette_new_agent = action_new_agent  # the palette's "New agent…"

    def action_filter(self) -> None:
        self.main_screen.open_filter()

    def action_clear_filter(self) -> None:
        self.main_screen.clear_filter()

    def action_chart_window(self) -> None:
        self.chart.toggle_window()

    def action_galaxy_full(self) -> None:
        self.main_screen.toggle_galaxy()

    def action_cycle_theme(self) -> None:
        self.theme = next_theme(self.theme_name)

    def _theme_changed(self, theme: object) -> None:
        name = getattr(theme, "name", str(theme))
        self.theme_name = name
        skip_ansi_filter(self)  # the widgets follow App.theme themselves (FollowsTheme)
        text, severity = theme_kept(self.run_dir, name, read_only=self.ops.read_only)
        self.say(text, severity=severity)

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.header.set_paused(self.paused)
        if not self.paused:
            self._apply_pending()

    def host_signalled(self) -> None:
        """A host signal (SIGTERM/SIGHUP/SIGINT) arrived: from now on the exit waits at
        most SIGNAL_GRACE_S for a terminal that does not drain. Called inside the signal
        handler itself (no lock, no loop): the loop may be what waits on the terminal."""
        if isinstance(self._driver, LegionDriver):
            self._driver.abandon_after(SIGNAL_GRACE_S)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_quit_legion(self) -> None:
        # Root is the host itself: only a live agent makes the quit a pause to confirm.
        agents_live = any(v.node.live and v.node.parent_id is not None
                          for v in self.model.nodes.values())  # fmt: skip
        self.operator.quit(ask_first=self.hosts and agents_live)

    async def action_quit(self) -> None:
        """Textual's own quit — Ctrl+Q and the palette's `Quit` — asks as `q` does: it
        ends the legion too. Over the help, the help closes so the question can show."""
        if isinstance(self.screen, HelpScreen):
            await self.screen.dismiss(None)
        self.action_quit_legion()

    def action_help_quit(self) -> None:
        """Ctrl+C: Textual's toast would name Ctrl+Q; ours names `q`, which asks first."""
        self.say(receipts.CTRL_C_HINT, title="Do you want to quit?")


# The factory tests and the CLI build the dashboard through (a canned model, a fixed
# clock and `timers=False` in tests): the class itself, so its keywords are declared once.
make_app = LegionApp
