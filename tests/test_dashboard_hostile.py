"""The dashboard host under attack (issue 14 items 3, 6 and 26): it never hangs, never
freezes, and says so in its exit code when it dies.

- 3: the terminal closing as the quit prompt is drawn deadlocked the host (Textual's
  writer thread dead, the loop blocked on its full queue; a SIGCONT from the hangup
  restarted application mode): agents never paused, SIGTERM ignored. Now the host pauses
  its agents and exits within EXIT_BOUND_S — after a hangup in tmux, a terminal that
  closes with no SIGHUP reaching the host, a SIGTERM while the terminal stops reading.
- 6: opening and closing the detail overlay fast while agents stream crashed the
  dashboard (`NoMatches` from updates to an overlay not yet or no longer composed) and
  `legion demo` still exited 0. Updates to an overlay that is not showing are dropped;
  a dashboard that dies exits 1.
- 26: 500 fast keys left a stack of identical overlays (every queued Enter/o pushed one)
  and a stop prompt open under them: Esc and q seemed to do nothing. Five runs of 500
  keys, each followed by the quit path, which must react to every key and restore the
  terminal.

Real everything: the pilot tests run the dashboard over a real Supervisor hosting the
demo legion (sim agents streaming); the terminal tests run the real `legion demo` in a
real pseudo-terminal (it leads its own session, as in a terminal window) or in tmux, its
output played by pyte. Every wait is on a condition with a bound.
"""

from __future__ import annotations

import fcntl
import os
import platform
import pty
import random
import re
import select
import signal
import sqlite3
import struct
import subprocess
import termios
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pyte
import pytest
from supervisor_helpers import LEGION, cli_env, hosted, stuck_worker, use_git_identity
from textual import events
from textual.pilot import Pilot
from textual.widgets import Static

from legion_tui.dashboard.app import LegionApp, ModelChanged, make_app
from legion_tui.demo import demo_budgets, start_demo, stop_demo
from legion_tui.runs.catalog import find_session_run
from legion_tui.supervisor.core import Supervisor
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.confirm import ConfirmBar
from legion_tui.widgets.help import HelpScreen
from legion_tui.widgets.overlay.detail import DetailScreen

pytestmark = pytest.mark.host

W, H = 120, 40
EXIT_BOUND_S = 15.0  # a host that pauses its agents and exits; before: never (SIGKILL)
REACT_S = 30.0  # a key's effect on screen, the backlog of a burst included
LIVE = {"running", "starting", "blocked"}
STUCK_NAME = "held"


# ----- the dashboard through the pilot, over a real streaming legion -----------------
@asynccontextmanager
async def demo_dashboard(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Supervisor, LegionApp, Pilot[None]]]:
    """The demo legion (20 sim agents streaming, one of them an OS process) hosted in
    this loop, and the dashboard over its model and its real RootOperations, running."""
    use_git_identity(monkeypatch)
    async with hosted(project, speed=5.0, budgets=demo_budgets(20)) as sup:
        demo = await start_demo(sup, 20, 7, 5.0)
        await stuck_worker(sup, STUCK_NAME)  # live for the whole test: prompts target it
        try:
            app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
            async with app.run_test(size=(W, H), notifications=True) as pilot:
                yield sup, app, pilot
        finally:
            await stop_demo(demo)


async def settle(pilot, app: LegionApp, predicate: Callable[[], bool], what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause()


def overlays(app: LegionApp) -> list[DetailScreen]:
    return [s for s in app.screen_stack if isinstance(s, DetailScreen)]


def streaming_node(sup: Supervisor) -> str:
    """A demo agent that streams now (it may settle a moment later)."""
    return next(
        v.node.id
        for v in sup.model.nodes.values()
        if v.node.live and v.node.parent_id and v.node.name != STUCK_NAME
    )


def held_node(sup: Supervisor) -> str:
    """The worker stuck in one long tool call: live until the test ends."""
    view = sup.model.by_path(f"root/{STUCK_NAME}")
    assert view is not None
    return view.node.id


def detail_for(app: LegionApp, node_id: str) -> DetailScreen:
    return DetailScreen(
        app.model, node_id, clock=app.clock, floor=True, run_dir=app.run_dir
    )


async def test_an_update_before_the_overlay_is_composed_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with demo_dashboard(tmp_path, monkeypatch) as (sup, app, pilot):
        node = streaming_node(sup)
        screen = detail_for(app, node)
        app.push_screen(screen)
        # The feed's next change, in the same instant: the overlay is on top but not
        # composed (before: NoMatches '#detail-head', the dashboard died).
        screen.model_changed(frozenset({node}))
        app.action_stop_node()  # a key for it too: dropped, not a crash
        app.action_steer_node()
        await settle(pilot, app, lambda: screen.showing, "the overlay to show")
        assert not screen.confirm_bar.asking
        # ... and the updates after it reach it
        name = sup.model.nodes[node].node.name
        head = screen.query_one("#detail-head", Static)
        assert str(head.content).startswith(f"{name} · ")


async def test_an_update_after_the_overlay_closed_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with demo_dashboard(tmp_path, monkeypatch) as (sup, app, pilot):
        app.railway.select(streaming_node(sup))
        await pilot.press("o")
        (screen,) = overlays(app)
        await pilot.press("escape")
        await settle(pilot, app, lambda: not screen.is_attached, "the overlay's removal")
        # A straggler of the feed addressed to the overlay that is gone (before:
        # NoMatches '#detail-head' on a screen no longer composed).
        screen.model_changed(frozenset({screen.node_id}))
        assert app.screen is app.main_screen


async def test_fast_open_requests_open_one_overlay_and_only_on_the_main_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with demo_dashboard(tmp_path, monkeypatch) as (sup, app, pilot):
        app.railway.select(streaming_node(sup))
        for _ in range(5):  # five Enter/o in flight before the first push lands
            app.railway.action_open()
        await settle(pilot, app, lambda: bool(overlays(app)), "an overlay")
        await pilot.pause()
        assert len(overlays(app)) == 1  # before: 5, one over the other
        await pilot.press("escape")
        assert app.screen is app.main_screen
        # A request still in flight when `?` opened the help: not over the help.
        app.railway.action_open()
        app.action_help()
        await pilot.pause()
        assert [type(s) for s in app.screen_stack][1:] == [HelpScreen]


async def test_a_prompt_the_overlay_covers_is_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with demo_dashboard(tmp_path, monkeypatch) as (sup, app, pilot):
        node = held_node(sup)
        app.railway.select(node)
        app.railway.action_open()  # o, then x before the overlay landed
        app.action_stop_node()
        bar = app.main_screen.query_one(ConfirmBar)
        assert bar.asking and bar.request is not None and bar.request.node_id == node
        cancelled = "Cancelled — nothing stopped."
        await settle(pilot, app, lambda: cancelled in [n.message for n in app.notifications],
                     "the covered prompt's cancel")  # fmt: skip
        assert not bar.asking and isinstance(app.screen, DetailScreen)
        await pilot.press("escape", "y")  # the y that once answered it long after
        assert sup.names.node(node).live


async def test_a_prompt_never_keeps_the_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The freeze of item 26, seen in a real terminal after 500 keys: the main screen's
    confirm bar held focus with no question, and swallowed every key after. Focus
    moves a moment after a prompt asks, so a fast q could still reach its binding
    through the tree and ask again over the open question — the bar then recorded
    itself as the widget to give focus back to."""
    async with demo_dashboard(tmp_path, monkeypatch) as (sup, app, pilot):
        bar = app.main_screen.query_one(ConfirmBar)
        app.railway.select(held_node(sup))
        await pilot.press("x")
        assert bar.asking and bar.has_focus
        app.action_quit_legion()  # that q: it answers the open question (any key: no)
        assert not bar.asking  # before: the quit question replaced the stop one
        await pilot.pause()
        assert not bar.has_focus and app.railway.has_focus
        # The end state the race left, made directly: a bar with focus and no question
        # lets keys through (before: swallowed, q and Esc and every other one).
        bar.focus()
        await pilot.pause()
        assert bar.has_focus and not bar.asking
        await pilot.press("q")
        assert bar.asking and bar.request is not None and bar.request.kind == "quit"


async def test_opening_and_closing_fast_while_agents_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with demo_dashboard(tmp_path, monkeypatch) as (sup, app, pilot):
        app.railway.select(streaming_node(sup))
        changes = sup.model.version
        for i in range(150):  # keys as the driver posts them: no wait in between
            app.post_message(events.Key("o", "o"))
            app.post_message(events.Key("escape", None))
            if i % 10 == 0:
                app.post_message(ModelChanged())
        await settle(pilot, app, lambda: sup.model.version > changes + 50, "streaming")
        await pilot.pause()
        assert len(overlays(app)) <= 1 and app._exception is None
        if overlays(app):  # the last o's request landed after the last Esc
            await pilot.press("escape")
        assert app.screen is app.main_screen
        await pilot.press("q")  # still the dashboard's own keys: the quit prompt
        assert app.main_screen.query_one(ConfirmBar).asking


# ----- the real `legion demo` in a real terminal --------------------------------------
def terminal_env() -> dict[str, str]:
    # The test runner exports COLUMNS/LINES behind os.environ's back; they would win over
    # the terminal's own size.
    env = {k: v for k, v in cli_env().items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    return env


class Terminal:
    """`argv` in a real pseudo-terminal as its session's leader (pty.fork, what a
    terminal window gives its shell); what it writes is played by pyte."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        env = terminal_env()
        pid, fd = pty.fork()
        if pid == 0:  # the child: size its terminal, then become the program
            try:
                os.chdir(cwd)
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", H, W, 0, 0))
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.screen = pyte.Screen(W, H)
        self.stream = pyte.ByteStream(self.screen)
        self.output = bytearray()
        self.status: int | None = None

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def read(self, timeout: float) -> int:
        """One read of what the program wrote, waiting up to `timeout`: the bytes read."""
        if self.fd < 0:  # closed: nothing to read, only the time to let pass
            select.select([], [], [], timeout)
            return 0
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return 0
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: every process on the terminal's side has gone
            data = b""
        self.output += data
        self.stream.feed(data)
        return len(data)

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                self._drain()
        return self.status is not None

    def _drain(self) -> None:
        """What the program wrote before it exited and is still in the terminal's buffer
        (its last frame, the alternate screen left): a soak run under load reaped the
        host before reading its goodbye, and missed `ESC[?1049l`."""
        while self.read(0):
            pass

    def until(self, condition: Callable[[], bool], timeout: float, what: str) -> float:
        """Read the terminal until `condition()`; returns the seconds it took."""
        started = time.monotonic()
        while not condition():
            if time.monotonic() - started > timeout:
                raise AssertionError(f"no {what} within {timeout:.0f} s:\n{self.text()}")
            self.read(0.05)
        return time.monotonic() - started

    def press(self, keys: str, pace: float = 0.0) -> None:
        """One write a key; between two, read what the program wrote for up to `pace`
        seconds (typing at up to 1/pace keys a second, the terminal kept drained)."""
        for key in keys:
            os.write(self.fd, key.encode())
            if pace:
                self.read(pace)

    def hang_up(self) -> None:
        """Close the terminal (the window closes): the kernel hangs its side up."""
        os.close(self.fd)
        self.fd = -1

    def close(self) -> None:
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@contextmanager
def terminal(argv: list[str], cwd: Path) -> Iterator[Terminal]:
    term = Terminal(argv, cwd)
    try:
        yield term
    finally:
        term.close()


def dashboard_up(term: Terminal) -> None:
    term.until(lambda: "LEGION" in term.screen.display[0] and "lead-2" in term.text(),
               30, "dashboard with its three teams")  # fmt: skip


def alive(pid: int) -> bool:
    """Whether `pid` (not necessarily our child) still runs: gone or a zombie is not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def until_gone(pid: int, timeout: float) -> float:
    started = time.monotonic()
    while alive(pid):
        if time.monotonic() - started > timeout:
            raise AssertionError(f"the host (pid {pid}) still runs {timeout:.0f} s later")
        select.select([], [], [], 0.05)
    return time.monotonic() - started


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def ledger_rows(project: Path, sql: str) -> list[tuple[object, ...]]:
    (run_file,) = (project / ".legion" / "sessions").glob("*.run")
    info = find_session_run(project, run_file.stem)
    assert info is not None
    con = sqlite3.connect(f"file:{info.ledger_path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def live_histories(project: Path) -> dict[object, list[tuple[object, ...]]]:
    """Each node the ledger still has live, with its events in order (what the failure
    needs to tell which path left it so)."""
    live = ledger_rows(
        project,
        "SELECT id, path FROM nodes WHERE status IN (" + ", ".join(f"'{s}'" for s in LIVE) + ")",
    )
    return {
        path: ledger_rows(
            project, f"SELECT at, type, data FROM events WHERE node_id = '{node_id}' ORDER BY id"
        )
        for (node_id, path) in live
    }


def assert_paused(project: Path) -> None:
    """Every agent that was live when the host went is paused: retired as
    session-shutdown (resumable), none left `running` in the ledger."""
    statuses = Counter(status for (status,) in ledger_rows(project, "SELECT status FROM nodes"))
    assert not LIVE & set(statuses), (statuses, live_histories(project))
    paused = ledger_rows(
        project,
        "SELECT count(*) FROM events WHERE type = 'node_retired'"
        " AND json_extract(data, '$.reason') = 'session-shutdown'",
    )[0][0]
    assert isinstance(paused, int) and paused > 1, statuses


def demo_argv(*extra: str) -> list[str]:
    return [LEGION, "demo", "--speed", "5", *extra]


@pytest.mark.parametrize("run", range(3))
def test_a_hangup_as_the_quit_prompt_is_drawn_pauses_and_exits(tmp_path: Path, run: int) -> None:
    """The issue's own reproduction: `legion demo` in tmux, q, and the terminal goes
    (tmux's server killed, the pane's pty with it) while the prompt is being drawn.
    Before: 3 of 6 such runs hung until SIGKILL, agents never paused."""
    sock = f"legion-hostile-{run}"
    env = terminal_env() | {"TMUX_TMPDIR": str(tmp_path)}  # its socket: ours, and gone after
    env.pop("TMUX", None)  # run from inside tmux, the test still starts its own server

    def tmux(*args: str) -> str:
        done = subprocess.run(["tmux", "-L", sock, "-f", os.devnull, *args], env=env,
                              capture_output=True, text=True, timeout=10, check=False)  # fmt: skip
        return done.stdout

    tmux("new-session", "-d", "-x", str(W), "-y", str(H), "-c", str(tmp_path),
         "exec " + " ".join(demo_argv()))  # fmt: skip
    pid = 0
    try:
        pid = int(tmux("display-message", "-p", "#{pane_pid}").strip())
        deadline = time.monotonic() + 30
        while "lead-2" not in tmux("capture-pane", "-p"):
            assert time.monotonic() < deadline, "the dashboard never came up in tmux"
            select.select([], [], [], 0.05)
        tmux("send-keys", "q")
        tmux("kill-server")
        seconds = until_gone(pid, EXIT_BOUND_S)
        print(f"hangup at the quit prompt: the host exited {seconds:.2f} s later")
    finally:
        tmux("kill-server")
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert_paused(tmp_path)


def test_a_terminal_that_closes_without_a_sighup_still_ends_the_host(tmp_path: Path) -> None:
    """The shell that leads the terminal's session ignores the hangup and lives on, so
    no SIGHUP reaches the dashboard: its next frames fail with EIO. Before: the writer
    thread died, the queue filled, the loop blocked for ever (agents never paused)."""
    said = tmp_path / "exit-code"
    script = f'trap "" HUP; {" ".join(demo_argv())}; echo $? > {said}'
    with terminal(["/bin/bash", "-c", script], tmp_path) as term:
        dashboard_up(term)
        (host,) = children(term.pid)
        try:
            term.hang_up()
            seconds = until_gone(host, EXIT_BOUND_S)
            print(f"terminal closed, no SIGHUP: the host exited {seconds:.2f} s later")
        finally:
            if alive(host):
                os.kill(host, signal.SIGKILL)
        term.until(term.exited, 10, "shell's end")
    assert said.read_text().strip() == "0"
    assert_paused(tmp_path)


WRITE = {"x86_64": 1, "aarch64": 64}[platform.machine()]  # the write(2) syscall number


def blocked_writing(pid: int) -> bool:
    """Whether a thread of `pid` sits in write(2) to fd 2, the terminal (Textual's
    output): the terminal has stopped reading and its buffer is full."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            call = (task / "syscall").read_text().split()
        except OSError:
            continue
        if len(call) > 1 and call[0] == str(WRITE) and int(call[1], 16) == 2:
            return True
    return False


def test_sigterm_while_the_terminal_stops_reading_pauses_and_exits(tmp_path: Path) -> None:
    """Nobody reads the terminal (a frozen window): frames fill its buffer and the
    output blocks. Before: SIGTERM changed nothing (its handler needed the loop, the
    loop waited on the terminal). Now: the agents pause and the host exits."""
    with terminal(demo_argv(), tmp_path) as term:
        dashboard_up(term)
        deadline = time.monotonic() + 30
        while not blocked_writing(term.pid):  # we stop reading: the terminal stalls
            assert time.monotonic() < deadline, "the terminal never filled up"
            select.select([], [], [], 0.05)
        os.kill(term.pid, signal.SIGTERM)
        started = time.monotonic()
        while not term.exited():  # still not reading: the terminal stays stalled
            assert time.monotonic() - started < EXIT_BOUND_S, "SIGTERM did not end the host"
            select.select([], [], [], 0.05)
        print(f"SIGTERM, stalled terminal: exited {time.monotonic() - started:.2f} s later")
        assert term.status == 0
    assert_paused(tmp_path)


QUIET_S = 2.0  # no change on screen for this long, all input read: the burst is handled


def unread_input(pid: int) -> int:
    """Bytes typed into the program's terminal that it has not read yet."""
    slave = os.open(os.readlink(f"/proc/{pid}/fd/0"), os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        return int(struct.unpack("i", fcntl.ioctl(slave, termios.FIONREAD, b"\0" * 4))[0])
    finally:
        os.close(slave)


def quit_through_the_keys(term: Terminal) -> None:
    """Once the keys before are handled, from whatever state they left: q until the
    quit prompt, then y. Each key must have its own effect within REACT_S — q answers
    a stop prompt (no), closes the overlay or the help, asks to quit on the main
    screen; y ends the host — which then exits 0, leaving the terminal as it found it
    (before: q closed one of a stack of identical overlays, or a hidden prompt
    swallowed it: no effect)."""

    def state() -> tuple[bool, bool, str]:
        text = term.text()
        prompt = next((line.strip() for line in term.screen.display if "y confirms" in line), "")
        return "Transcript  Activity" in text, "legion keys" in text, prompt[:5]

    # The burst's backlog first: all of it read, then nothing changing for QUIET_S.
    term.until(lambda: term.exited() or unread_input(term.pid) == 0, REACT_S, "input read")
    last_seen, since = state(), time.monotonic()

    def settled() -> bool:
        nonlocal last_seen, since
        if state() != last_seen:
            last_seen, since = state(), time.monotonic()
        return term.exited() or time.monotonic() - since >= QUIET_S

    term.until(settled, REACT_S * 2, "end of the burst's effects")
    for _ in range(6):
        assert not term.exited(), f"the dashboard ended on its own:\n{term.text()}"
        overlay, help_shown, prompt = state()
        if prompt == "Quit?":
            term.press("y")
            term.until(term.exited, REACT_S, "host's end after y")
            break
        term.press("q")
        if prompt:
            expected, what = (lambda: not state()[2]), "q to answer the prompt"
        elif overlay:
            expected, what = (lambda: not state()[0]), "q to close the overlay"
        elif help_shown:
            expected, what = (lambda: not state()[1]), "q to close the help"
        else:
            expected, what = (lambda: state()[2] == "Quit?"), "q to ask to quit"
        term.until(lambda: term.exited() or expected(), REACT_S, what)  # noqa: B023
    else:
        raise AssertionError(f"never reached the quit prompt:\n{term.text()}")
    assert term.status == 0, term.text()
    last = term.output.rfind(b"\x1b[?1049h")
    tail = bytes(term.output[last:])
    # alternate screen left, mouse reporting off, cursor shown again
    assert b"\x1b[?1049l" in tail and b"\x1b[?1000l" in tail and b"\x1b[?25h" in tail


def test_opening_and_closing_the_overlay_fast_in_a_real_terminal(tmp_path: Path) -> None:
    """o o (a double press), and q the moment the overlay shows, 10 times while the
    agents stream: one overlay each time, and q closes it. Before: each o pushed an
    overlay of its own and q closed only the top one (3 of 3 runs); the feed's update
    reaching an overlay pushed but not composed yet killed the dashboard — NoMatches
    '#detail-head' — with the demo still saying 0 (the pilot tests above pin both)."""

    def overlay() -> bool:
        return "Transcript  Activity" in term.text()

    with terminal(demo_argv(), tmp_path) as term:
        dashboard_up(term)
        # Ten rounds: a double press stacked two overlays on every round, and the crash
        # of an overlay pushed but not composed is pinned by the pilot tests above. Thirty
        # took 14–22 s, and past the test's 120 s on a machine three times oversubscribed.
        for _ in range(10):
            term.press("oo")
            term.until(lambda: term.exited() or overlay(), REACT_S, "overlay")
            term.press("q")
            term.until(lambda: term.exited() or not overlay(), REACT_S, "overlay's close")
            assert not term.exited(), f"the dashboard died:\n{term.text()}"
        quit_through_the_keys(term)
    assert_paused(tmp_path)


KEYS = "jkoqxhlwtgp?+-a\roo"  # every key that acts but y (it would confirm a stop)


@pytest.mark.parametrize("seed", range(5))
def test_500_fast_keys_leave_a_dashboard_that_reacts_and_exits_cleanly(
    tmp_path: Path, seed: int
) -> None:
    """Before: 2 of 5 runs stopped reacting while still painting (overlays stacked under
    one another, a stop prompt open beneath them) or died, and the terminal stayed in
    the alternate screen with mouse reporting on."""
    keys = "".join(random.Random(seed).choice(KEYS) for _ in range(500))
    with terminal(demo_argv(), tmp_path) as term:
        dashboard_up(term)
        term.press(keys, pace=0.002)
        quit_through_the_keys(term)
    assert_paused(tmp_path)


def test_a_stray_sigcont_does_not_restart_the_terminal_mode(tmp_path: Path) -> None:
    """The kernel sends SIGCONT with every hangup, anyone may send one: Textual resumed
    application mode on it (a second writer and input thread, the start-up sequences
    again). Only our own SIGTSTP's SIGCONT resumes."""
    with terminal(demo_argv(), tmp_path) as term:
        dashboard_up(term)
        os.kill(term.pid, signal.SIGCONT)
        quit_through_the_keys(term)  # keys after the signal: its handler has run by then
        assert term.output.count(b"\x1b[?1049h") == 1


def test_a_dashboard_that_dies_exits_non_zero(tmp_path: Path) -> None:
    """A broken centurion card makes the demo's first spawn fail inside the dashboard:
    it dies with the card's problems on screen. Before: `legion demo` exited 0."""
    cards = tmp_path / ".legion" / "agents"
    cards.mkdir(parents=True)
    (cards / "centurion.md").write_text("---\nname: centurion\nbogus: 1\n---\nbody\n")
    with terminal(demo_argv(), tmp_path) as term:
        term.until(term.exited, 60, "end of the dashboard")
        said = re.sub(rb"\x1b\[[0-9;?<>]*[A-Za-z]", b"", bytes(term.output))
        assert b"role card 'centurion' is invalid" in said
        assert term.status == 1


def test_a_sighup_with_the_terminal_still_there_pauses_and_restores_it(tmp_path: Path) -> None:
    """`kill -HUP` from another shell: a pause like any exit, and the terminal (still
    open) left as it was found."""
    with terminal(demo_argv(), tmp_path) as term:
        dashboard_up(term)
        os.kill(term.pid, signal.SIGHUP)
        seconds = term.until(term.exited, EXIT_BOUND_S, "host's end after SIGHUP")
        print(f"SIGHUP: exited {seconds:.2f} s later")
        assert term.status == 0
        term.until(lambda: b"\x1b[?1049l" in term.output, 5, "alternate screen left")
    assert_paused(tmp_path)
