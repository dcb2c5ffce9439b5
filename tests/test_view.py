"""`legion tui --view` (issue 15 item 1): a second dashboard on a run a real host holds.

The host is a real Supervisor with sim agents in a temp project, serving its real
socket; the view is the real LegionApp over a ViewFeed (the ledger followed read-only,
the session files tailed) and SocketOperations (every act over that socket)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from supervisor_helpers import hosted, run_cli, settled, spawn_one, stuck_worker, until

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.dashboard.remote_ops import READ_ONLY_REFUSAL
from legion_tui.dashboard.view import ViewFeed, view_operations
from legion_tui.ledger.follow import LedgerFollower
from legion_tui.model import EventType, NodeStatus
from legion_tui.runs.catalog import find_session_run
from legion_tui.supervisor.core import Supervisor
from legion_tui.widgets.confirm import ConfirmBar

pytestmark = pytest.mark.host

NODE_STEERED = EventType.NODE_STEERED


def notes(app: LegionApp) -> list[str]:
    return [n.message for n in app.notifications]


async def wait_app(pilot, predicate: Callable[[], bool], what: str) -> None:  # type: ignore[no-untyped-def]
    """Let the app run until `predicate` holds, with a deadline (never a blind sleep)."""
    deadline = time.monotonic() + 20
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


@asynccontextmanager
async def viewing(sup: Supervisor, *, follow: bool = True) -> AsyncIterator[ViewFeed]:
    """A ViewFeed on the host's run, found as `legion tui --view` finds it; `follow`:
    keep following (else only the first look: a view that lags behind the host)."""
    run = find_session_run(sup.project_dir, sup.model.session_name)
    assert run is not None
    feed = ViewFeed(run)
    feed.open()
    task = asyncio.create_task(feed.run()) if follow else None
    try:
        yield feed
    finally:
        if task is not None:
            feed.stop()
            await task
        else:
            feed.follower.close()


def view_app(feed: ViewFeed, *, control: bool = True) -> LegionApp:
    ops = view_operations(feed, Path(feed.info.cwd), control=control)
    return make_app(feed.model, ops, timers=False, run_dir=feed.info.dir, hosts=False)


async def select(pilot, app: LegionApp, node_id: str) -> None:  # type: ignore[no-untyped-def]
    await wait_app(pilot, lambda: app.railway.row_of(node_id) is not None, f"{node_id}'s row")
    app.railway.select(node_id)
    await pilot.pause()


async def test_the_view_shows_the_hosts_tree_and_its_progress(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        keep = await stuck_worker(sup, "keep")
        async with viewing(sup) as feed:
            app = view_app(feed)
            async with app.run_test(size=(120, 40)) as pilot:
                await select(pilot, app, keep.id)
                # The rows are the host's own nodes, and the session file's in-flight
                # tool reached the view from the file, not from the host.
                assert [v.node.path for v, _ in feed.model.walk()] == [
                    v.node.path for v, _ in sup.model.walk()
                ]
                await wait_app(
                    pilot,
                    lambda: bool(feed.model.nodes[keep.id].progress.in_flight),
                    "keep's tool call in the view",
                )
                # A node spawned after the view opened appears in it.
                late = await spawn_one(sup, name="late")
                await wait_app(
                    pilot, lambda: app.railway.row_of(late.id) is not None, "the late row"
                )
                assert feed.model.nodes[late.id].node.name == "late"


async def test_a_stop_from_the_view_goes_through_the_socket(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        keep = await stuck_worker(sup, "keep")
        kill = await stuck_worker(sup, "kill")
        async with viewing(sup) as feed:
            app = view_app(feed)
            async with app.run_test(size=(120, 40), notifications=True) as pilot:
                await select(pilot, app, kill.id)
                await pilot.press("x")
                bar = app.screen.query_one(ConfirmBar)
                assert bar.request is not None and bar.request.node_id == kill.id
                await pilot.press("y")
                await wait_app(pilot, lambda: "Stopped kill." in notes(app), "the receipt")
                # The host retired it; the view learns so from the ledger.
                assert sup.names.node(kill.id).status is NodeStatus.RETIRED
                await wait_app(
                    pilot,
                    lambda: feed.model.nodes[kill.id].node.status is NodeStatus.RETIRED,
                    "the retired row in the view",
                )
                assert sup.names.node(keep.id).status is NodeStatus.RUNNING
                assert feed.model.nodes[keep.id].node.live


async def test_a_refused_operation_shows_the_supervisors_reason(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        gone = await stuck_worker(sup, "gone")
        # This view took one look and follows no further: it still shows `gone` live
        # after the host stopped it (a view a moment behind), so the steer is sent.
        async with viewing(sup, follow=False) as feed:
            await sup.stops.stop("root", gone.id)
            await settled(sup, gone.id)
            app = view_app(feed)
            async with app.run_test(size=(120, 40), notifications=True) as pilot:
                await select(pilot, app, gone.id)
                assert feed.model.nodes[gone.id].node.live
                await pilot.press("s", *"carry on", "enter")
                await wait_app(pilot, lambda: bool(notes(app)), "the refusal")
                (refusal,) = app.notifications
                assert refusal.severity == "error"
                assert refusal.title == "RETIRED"
                assert refusal.message == "steer failed: gone is retired"


async def test_a_read_only_view_refuses_every_operation_and_sends_none(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        keep = await stuck_worker(sup, "keep")
        async with viewing(sup) as feed:
            app = view_app(feed, control=False)
            async with app.run_test(size=(120, 40), notifications=True) as pilot:
                await select(pilot, app, keep.id)
                await pilot.press("x", "y")
                await wait_app(pilot, lambda: bool(notes(app)), "the refusal")
                await pilot.press("s", *"carry on", "enter")
                await wait_app(pilot, lambda: len(notes(app)) == 2, "the second refusal")
                assert notes(app) == [READ_ONLY_REFUSAL, READ_ONLY_REFUSAL]
                assert {n.title for n in app.notifications} == {"FORBIDDEN"}
                assert sup.names.node(keep.id).status is NodeStatus.RUNNING
                steered = [e for e in sup.model.nodes[keep.id].events if e.type is NODE_STEERED]
                assert steered == []


async def test_quitting_a_view_asks_nothing_and_pauses_nothing(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        keep = await stuck_worker(sup, "keep")
        async with viewing(sup) as feed:
            app = view_app(feed)
            async with app.run_test(size=(120, 40)) as pilot:
                await select(pilot, app, keep.id)
                await pilot.press("q")
                await wait_app(pilot, lambda: not app.is_running, "the view to quit")
        assert sup.names.node(keep.id).status is NodeStatus.RUNNING


async def test_an_idle_ledger_is_not_read_again(tmp_path: Path) -> None:
    """The follower's gate: a look with no commit since the last reads no table."""
    async with hosted(tmp_path) as sup:
        node = await spawn_one(sup, name="done")
        await settled(sup, node.id)
        await sup.ledger.flush()
        follower = LedgerFollower(sup.run.ledger_path)
        follower.open()
        try:
            assert follower.poll() is not None
            assert [follower.poll() for _ in range(5)] == [None] * 5
            assert follower.reads == 1
            await spawn_one(sup, name="another")
            await sup.ledger.flush()
            changes = follower.poll()
            assert changes is not None and "another" in [n.name for n in changes.nodes]
            assert follower.reads == 2
        finally:
            follower.close()


async def test_a_paused_host_leaves_the_view_showing_interrupted_agents(tmp_path: Path) -> None:
    """The host closes (a pause): its live agents are retired `session-shutdown`; the
    view marks them interrupted as a reopening host would, and a resume says no host
    is there to do it."""
    sup = Supervisor(tmp_path, session="main", speed=200.0, stop_grace=1.0, default_kind="sim")
    await sup.start()
    try:
        paused = await stuck_worker(sup, "paused")
        async with viewing(sup) as feed:
            app = view_app(feed)
            async with app.run_test(size=(120, 40), notifications=True) as pilot:
                await select(pilot, app, paused.id)
                await sup.close()
                await wait_app(
                    pilot, lambda: feed.model.nodes[paused.id].interrupted, "the interrupted mark"
                )
                await pilot.press("r")
                await wait_app(pilot, lambda: bool(notes(app)), "the refusal")
                assert notes(app) == [
                    "no live supervisor hosts session 'main' "
                    "(reopen it with `legion tui --session main`)"
                ]
    finally:
        await sup.close()


async def test_a_view_of_an_ended_run_writes_nothing_and_follows_its_reopening(
    tmp_path: Path,
) -> None:
    """Nobody hosts the run: the view reads it without leaving a -wal/-shm beside it.
    A host that reopens the session later is followed as one that was there all along."""
    async with hosted(tmp_path) as sup:
        paused = await stuck_worker(sup, "paused")
    run = find_session_run(tmp_path, "main")
    assert run is not None
    before = sorted(p.name for p in run.dir.iterdir())
    feed = ViewFeed(run)
    feed.open()
    following = asyncio.create_task(feed.run())
    try:
        assert feed.model.nodes[paused.id].interrupted
        assert sorted(p.name for p in run.dir.iterdir()) == before
        async with hosted(tmp_path) as again:
            late = await spawn_one(again, name="late")
            await until(lambda: late.id in feed.model.nodes, what="the reopened host's node")
    finally:
        feed.stop()
        await following


async def test_a_feed_stopped_as_it_starts_ends(tmp_path: Path) -> None:
    """Stopped before its first step ran (a view quit at once, an error right after the
    start): the feed and its session watcher still end."""
    async with hosted(tmp_path) as sup, viewing(sup, follow=False) as feed:
        following = asyncio.create_task(feed.run())
        feed.stop()
        await until(following.done, limit=10, what="the feed to end")
        following.result()
        leftover = [t for t in asyncio.all_tasks() if t.get_name() == "view-session-watcher"]
        assert leftover == []


async def test_legion_tui_view_without_a_run_says_so(tmp_path: Path) -> None:
    legion_dir = await asyncio.to_thread(lambda: tmp_path.resolve() / ".legion")
    code, _out, err = await run_cli("tui", "--view", "--session", "nothing", cwd=tmp_path)
    assert code == 1
    assert err.strip() == f"legion tui --view: no run for session 'nothing' in {legion_dir}"
    code, _out, err = await run_cli("tui", "--view", cwd=tmp_path)
    assert code == 1
    assert "no legion run in" in err


async def test_a_view_of_a_ledger_that_is_not_one_is_refused_and_leaves_it_alone(
    tmp_path: Path,
) -> None:
    async with hosted(tmp_path) as sup:
        ledger = sup.run.ledger_path
    garbage = b"not a ledger at all\n" * 10
    await asyncio.to_thread(ledger.write_bytes, garbage)
    code, _out, err = await run_cli("tui", "--view", "--session", "main", cwd=tmp_path)
    assert code == 1
    assert err == (
        f"legion tui --view: {ledger}: not an SQLite database (no SQLite header), "
        "not a legion ledger\n"
    )
    assert await asyncio.to_thread(ledger.read_bytes) == garbage
    leftovers = await asyncio.to_thread(lambda: sorted(p.name for p in ledger.parent.iterdir()))
    assert "legion.db-wal" not in leftovers and "legion.db-shm" not in leftovers
