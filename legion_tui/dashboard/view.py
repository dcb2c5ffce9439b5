"""`legion tui --view`: a second dashboard on a run another process hosts.

It hosts nothing — no supervisor, no ledger writer, no socket of its own. Its model is
fed from the run folder alone: the ledger followed read-only (`ledger/follow.py`: a look
every REFRESH_SECONDS that reads tables only after a commit) and the session files tailed
by the same `SessionWatcher` a host uses. Every operation goes to the host's socket
(`remote_ops.py`), so keys work as in the host's own dashboard and a refusal is shown in
the supervisor's words. What only the host's memory holds is not shown: the message an
RPC agent is generating right now (its row catches up when the session file has it) and
an exec command's current terminal line.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from legion_tui.dashboard.remote_ops import ReadOnlyOperations, SocketOperations
from legion_tui.git.worktree import recorded_worktree
from legion_tui.ledger.follow import FACT_TYPES, LedgerChanges, LedgerFollower
from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Event
from legion_tui.ops import Operations, Workspace
from legion_tui.runs.catalog import find_live_run, find_project_dir, find_session_run, newest_run
from legion_tui.runs.folder import RunInfo, legion_dir
from legion_tui.session.progress import SessionProgress
from legion_tui.state import LegionModel
from legion_tui.supervisor.life.retire_reasons import INTERRUPT_REASONS
from legion_tui.timeouts import within

# How often the ledger is looked at: a commit reaches the rows within this (an idle
# legion's look is one pragma); session files reach them within the watcher's ~20 ms.
REFRESH_SECONDS = 0.25


class ViewFeed:
    """Keeps a LegionModel in step with a run folder, reading only."""

    def __init__(self, run: RunInfo, *, refresh_seconds: float = REFRESH_SECONDS) -> None:
        self.info = run
        self.refresh_seconds = refresh_seconds
        self.model = LegionModel(run.run_id, run.session_name, started_at=run.updated_at)
        self.follower = LedgerFollower(run.ledger_path)
        # Each node's last event of the follower's FACT_TYPES (launch, retire).
        self._facts: dict[tuple[str, EventType], Event] = {}
        # Progress of a session file whose node row this view has not read yet: the
        # watcher reports a file once per change, so it is kept until the row arrives.
        self._unplaced: dict[str, SessionProgress] = {}
        self._stop = asyncio.Event()

    def open(self) -> None:
        """Connect and take the first look (the tree is there before the first frame);
        LedgerError when the run's ledger cannot be read."""
        self.follower.open()
        first = self.follower.poll()
        if first is not None:
            self.apply(first)

    def apply(self, changes: LedgerChanges) -> None:
        model = self.model
        for node in changes.nodes:
            view = model.nodes.get(node.id)
            if view is None or view.node != node:
                model.upsert(node)
            progress = self._unplaced.pop(node.id, None)
            if progress is not None:
                model.set_progress(node.id, progress)
        for event in [*changes.facts, *changes.events]:
            if event.type in FACT_TYPES and event.node_id is not None:
                self._facts[(event.node_id, event.type)] = event
        for event in changes.events:
            model.add_event(event)
        for node_id, (stats, letters) in changes.mail.items():
            if node_id in model.nodes:
                model.set_mail(node_id, stats, letters)
        for node_id, view in model.nodes.items():
            # As the host decides it on open (supervisor/continuity.py): retired by a
            # pause or found orphaned, with a session to resume from.
            retired = self._facts.get((node_id, EventType.NODE_RETIRED))
            interrupted = (
                view.node.status is NodeStatus.RETIRED
                and retired is not None
                and retired.data.get("reason") in INTERRUPT_REASONS
                and bool(view.node.session_file)
            )
            if view.interrupted != interrupted:
                model.mark_interrupted(node_id, interrupted)

    def workspace(self, node_id: str) -> Workspace | None:
        """The worktree `node_id` works in, as its host knows it (supervisor/teams/teams.py): its
        own or its nearest ancestor's, from the ledger's launch record."""
        view = self.model.nodes.get(node_id)
        while view is not None:
            launched = self._facts.get((view.node.id, EventType.NODE_LAUNCHED))
            tree = recorded_worktree(launched.data) if launched is not None else None
            if tree is not None:
                return Workspace(view.node.id, tree)
            view = self.model.nodes.get(view.node.parent_id or "")
        return None

    def _on_progress(self, node_id: str, progress: SessionProgress) -> None:
        if node_id in self.model.nodes:
            self.model.set_progress(node_id, progress)
        else:
            self._unplaced[node_id] = progress

    async def run(self) -> None:
        """Follow the run until `stop()`: the watcher and the ledger looks."""
        from legion_tui.session.watcher import SessionWatcher

        watcher = SessionWatcher(self.info.sessions_dir, self._on_progress, self.model.clock)
        watching = asyncio.create_task(watcher.run(), name="view-session-watcher")
        try:
            while not self._stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await within(self._stop.wait(), self.refresh_seconds)
                if self._stop.is_set():
                    break
                # Off the loop: a look after a big commit must not hold a frame.
                changes = await asyncio.to_thread(self.follower.poll)
                if changes is not None:
                    self.apply(changes)
        finally:
            watcher.stop()
            # Cancelled too: a watcher stopped before its first step clears the stop as
            # it starts, and would run on.
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            self.follower.close()

    def stop(self) -> None:
        self._stop.set()


def find_view_run(project: Path, session: str | None) -> RunInfo | str:
    """The run to view: the session's, else the newest live one, else the newest one;
    the reason none can be viewed otherwise."""
    if session is not None:
        found = find_session_run(project, session)
        return found or f"no run for session {session!r} in {legion_dir(project)}"
    found = find_live_run(project) or newest_run(project)
    return found or (
        f"no legion run in {legion_dir(project)} "
        "(start one with `legion tui`, `legion run` or `legion demo`)"
    )


def view_operations(feed: ViewFeed, project: Path, *, control: bool) -> Operations:
    if control:
        return SocketOperations(feed.info, project, feed.workspace)
    return ReadOnlyOperations(project)


async def run_view(cwd: Path, session: str | None, theme: str, *, control: bool = True) -> int:
    """Run the view dashboard until the user quits; the exit code of `legion tui --view`."""
    from legion_tui.dashboard.app import LegionApp
    from legion_tui.dashboard.running import run_dashboard_async
    from legion_tui.ledger import LedgerError

    project = find_project_dir(cwd)
    found = find_view_run(project, session)
    if isinstance(found, str):
        print(f"legion tui --view: {found}", file=sys.stderr)
        return 1
    feed = ViewFeed(found)
    try:
        feed.open()
    except LedgerError as err:
        print(f"legion tui --view: {err}", file=sys.stderr)
        return 1
    ops = view_operations(feed, project, control=control)
    app: LegionApp | None = None

    def app_ready(made: LegionApp) -> None:
        nonlocal app
        app = made

    def on_signal() -> None:
        if app is not None:
            app.exit()

    loop = asyncio.get_running_loop()
    # Nothing to pause on the way out: a signal ends the view as `q` does, so the
    # terminal is given back as it was.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal)
    following = asyncio.create_task(feed.run(), name="view-feed")
    try:
        code = await run_dashboard_async(
            feed.model, ops, theme=theme, run_dir=found.dir, app_ready=app_ready, hosts=False
        )
    finally:
        feed.stop()
        await following
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
    return 1 if code else 0
