"""Fixtures and process workers for the ledger tests (workers must be importable: spawn)."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from legion_tui.ledger import Ledger, connect, immediate, open_ledger
from legion_tui.model import EventType
from legion_tui.model_records import Node


def make_node(
    id: str,
    *,
    run_id: str = "run-1",
    parent_id: str | None = None,
    name: str | None = None,
    **fields: Any,
) -> Node:
    name = name or id
    values: dict[str, Any] = {
        "path": f"root/{name}" if parent_id else name,
        "role": "worker" if parent_id else "root",
        "kind": "sim",
        "backend": "inprocess",
        "created_at": 1_700_000_000.25,
        "updated_at": 1_700_000_000.25,
    }
    values.update(fields)
    return Node(id=id, run_id=run_id, parent_id=parent_id, name=name, **values)


def ticking_clock(start: float = 1_800_000_000.0, step: float = 1.0) -> Callable[[], float]:
    """A deterministic clock: every call is `step` seconds after the previous one."""
    counter = itertools.count()
    return lambda: start + step * next(counter)


@pytest.fixture(name="ledger")
async def ledger_fixture(tmp_path: Path) -> AsyncIterator[Ledger]:
    """The `ledger` fixture: a new ledger file in the test's folder, on a ticking clock,
    closed after the test. A test module that wants it imports `ledger_fixture`."""
    async with await open_ledger(tmp_path / "legion.db", create=True, clock=ticking_clock()) as led:
        yield led


def size_of(path: Path | str) -> int:
    return os.path.getsize(path)


def file_snapshot(path: Path) -> tuple[bytes, list[str]]:
    """The file's bytes and every name in its folder (to catch a new -wal/-shm)."""
    return path.read_bytes(), sorted(os.listdir(path.parent))


def run_workers(
    count: int,
    target: Callable[..., None],
    args_of: Callable[[int], tuple[Any, ...]],
    *,
    timeout: float = 90.0,
) -> list[Any]:
    """Run `target(*args_of(worker), start, results)` in `count` spawned processes.

    All wait at the `start` barrier (imported and ready) before anyone writes; each puts
    one outcome on `results`. Returns the outcomes once every process exited cleanly.
    """
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(count)
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args_of(w), start, results)) for w in range(count)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return outcomes


def read_then_write_worker(path: str, worker: int, count: int, start: Any, results: Any) -> None:
    """`count` transactions of SELECT-then-INSERT, each in BEGIN IMMEDIATE."""
    locked = 0
    other: list[str] = []
    conn = connect(Path(path))
    start.wait()
    for i in range(count):
        try:
            with immediate(conn):
                seen = conn.execute("SELECT count(*) FROM events").fetchone()[0]
                conn.execute(
                    "INSERT INTO events (node_id, type, data, at) VALUES (?, ?, ?, ?)",
                    (f"w{worker}", "node_steered", f'{{"i":{i},"seen":{seen}}}', 0.0),
                )
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                locked += 1
            else:
                other.append(str(exc))
    conn.close()
    results.put((worker, locked, other))


def async_ledger_worker(path: str, worker: int, count: int, start: Any, results: Any) -> None:
    """The full async Ledger under contention: `count` awaited appends, each also reading."""

    async def run() -> tuple[int, list[str]]:
        errors: list[str] = []
        ledger = await open_ledger(Path(path))
        start.wait()
        for i in range(count):
            try:
                await ledger.get_events(f"a{worker}", limit=1)
                await ledger.append_event(f"a{worker}", EventType.NODE_HANDLED, {"i": i})
            except Exception as exc:
                errors.append(repr(exc))
        await ledger.close()
        return worker, errors

    results.put(asyncio.run(run()))


def migrate_worker(path: str, start: Any, results: Any) -> None:
    """Open the ledger (which migrates it) and report which versions this process applied.

    `start` is a Barrier: every process is imported and ready before any opens the file.
    """

    async def run() -> list[int]:
        start.wait()
        ledger = await open_ledger(Path(path))
        applied = ledger.migrations_applied
        await ledger.close()
        return applied

    try:
        results.put(("ok", asyncio.run(run())))
    except Exception as exc:
        results.put(("error", repr(exc)))


def churn_worker(path: str, count: int, start: Any) -> None:
    """Commit and checkpoint in a loop, so page 1 of the main file is rewritten often."""
    conn = connect(Path(path))
    start.wait()
    for i in range(count):
        with immediate(conn):
            conn.execute(
                "INSERT INTO events (node_id, type, data, at) VALUES ('c', 'node_handled', ?, 0)",
                (f'{{"pad":"{"z" * 2000}","i":{i}}}',),
            )
        if i % 5 == 4:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
