"""Several processes writing one ledger: BEGIN IMMEDIATE + busy_timeout ⇒ never "locked"."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from ledger_helpers import async_ledger_worker, churn_worker, read_then_write_worker, run_workers

from legion_tui.ledger import connect, open_ledger, read_snapshot
from legion_tui.model import EventType

pytestmark = pytest.mark.unit

PROCESSES = 6
TRANSACTIONS = 300


async def _new_ledger(path: Path) -> None:
    ledger = await open_ledger(path, create=True)
    await ledger.close()


async def test_six_processes_read_then_write_without_locking(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    await _new_ledger(path)
    outcomes = run_workers(
        PROCESSES, read_then_write_worker, lambda w: (str(path), w, TRANSACTIONS)
    )
    assert [(locked, other) for _, locked, other in outcomes] == [(0, [])] * PROCESSES
    conn = sqlite3.connect(path)
    per_worker = dict(
        conn.execute("SELECT node_id, count(*) FROM events GROUP BY node_id").fetchall()
    )
    conn.close()
    assert per_worker == {f"w{w}": TRANSACTIONS for w in range(PROCESSES)}


async def test_six_async_ledgers_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    await _new_ledger(path)
    outcomes = run_workers(PROCESSES, async_ledger_worker, lambda w: (str(path), w, 100))
    assert sorted(outcomes) == [(w, []) for w in range(PROCESSES)]
    async with await open_ledger(path) as ledger:
        for w in range(PROCESSES):
            events = await ledger.get_events(f"a{w}", limit=1000)
            assert [e.data["i"] for e in events] == list(range(100))


async def test_a_write_waits_for_another_writer_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    async with await open_ledger(path, create=True) as ledger:
        other = connect(path)  # another writer (another process in real life)
        other.execute("BEGIN IMMEDIATE")
        other.execute(
            "INSERT INTO events (node_id, type, data, at) VALUES ('x', 'node_handled', '{}', 0)"
        )
        write = asyncio.ensure_future(ledger.append_event("n1", EventType.NODE_LAUNCHED))
        done, _ = await asyncio.wait({write}, timeout=0.3)
        assert not done  # blocked on the lock: waiting, not failing with "database is locked"
        other.execute("COMMIT")
        other.close()
        event = await asyncio.wait_for(write, timeout=5)
        assert [e.id for e in await ledger.get_events()] == [1, event.id]


async def test_recognition_never_refuses_a_ledger_being_written(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    await _new_ledger(path)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    writer = ctx.Process(target=churn_worker, args=(str(path), 400, start))
    writer.start()
    start.wait()
    reads = 0
    while writer.is_alive():  # bounded by the writer's 400 transactions
        nodes, _usage = read_snapshot(path)  # recognises the file first, then reads
        assert nodes == []
        reads += 1
    writer.join()
    assert writer.exitcode == 0 and reads > 0
    async with await open_ledger(path) as ledger:
        assert len(await ledger.get_events("c", limit=1000)) == 400
