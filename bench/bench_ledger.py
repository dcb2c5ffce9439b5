"""Ledger benchmark (SPEC §8 ledger row). Standalone: `.venv/bin/python bench/bench_ledger.py`.

1. Throughput, same rows in the same run: the batching writer vs one transaction per
   row (through the Ledger, and through plain aiosqlite — what a user would reach for),
   with plain sqlite3 `executemany` in one transaction as the ceiling.
2. Contention: 6 processes × 300 read-then-write transactions on one file with
   BEGIN IMMEDIATE (count of "database is locked", p50/p99 latency), and the same with
   a deferred BEGIN for contrast.
3. 60 writer tasks (6 processes × 10 tasks, each process its own Ledger) for a few
   seconds: locked errors and p50/p99 latency of an awaited write.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
from calibration import calibrated

from legion_tui.ledger import LedgerError, connect, immediate, open_ledger
from legion_tui.ledger.connection import CONNECTION_PRAGMAS
from legion_tui.model import EventType

ROWS = 5_000
REPEATS = 3
PROCESSES = 6
TRANSACTIONS = 300
TASKS_PER_PROCESS = 10
ASYNC_SECONDS = 5.0
INSERT = "INSERT INTO events (node_id, type, data, at) VALUES (?, ?, ?, ?)"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def out(name: str, value: float, unit: str) -> None:
    if isinstance(value, int):
        print(f"{name}: {value} {unit}")
    else:
        print(f"{name}: {value:.3f} {unit}" if value < 100 else f"{name}: {value:.0f} {unit}")


# ----- 1. throughput ----------------------------------------------------------------
async def batched_writer(path: Path) -> tuple[float, int]:
    ledger = await open_ledger(path, create=True)
    t0 = time.perf_counter()
    for chunk in range(0, ROWS, 1000):  # 1000 concurrent writers at a time
        await asyncio.gather(
            *(
                ledger.append_event("n1", EventType.NODE_HANDLED, {"i": i})
                for i in range(chunk, chunk + 1000)
            )
        )
    elapsed = time.perf_counter() - t0
    transactions = ledger.stats.transactions
    await ledger.close()
    return ROWS / elapsed, transactions


async def ledger_per_row(path: Path) -> float:
    ledger = await open_ledger(path, create=True)
    t0 = time.perf_counter()
    for i in range(ROWS):  # awaited one by one: one transaction per row
        await ledger.append_event("n1", EventType.NODE_HANDLED, {"i": i})
    elapsed = time.perf_counter() - t0
    await ledger.close()
    return ROWS / elapsed


async def aiosqlite_per_row(path: Path) -> float:
    await _create(path)
    db = await aiosqlite.connect(path, isolation_level=None)
    for pragma in CONNECTION_PRAGMAS:
        await db.execute_fetchall(pragma)
    t0 = time.perf_counter()
    for i in range(ROWS):
        await db.execute_fetchall("BEGIN IMMEDIATE")
        await db.execute_fetchall(INSERT, ("n1", "node_handled", f'{{"i":{i}}}', 0.0))
        await db.execute_fetchall("COMMIT")
    elapsed = time.perf_counter() - t0
    await db.close()
    return ROWS / elapsed


async def executemany_ceiling(path: Path) -> float:
    await _create(path)
    conn = connect(path)
    rows = [("n1", "node_handled", f'{{"i":{i}}}', 0.0) for i in range(ROWS)]
    t0 = time.perf_counter()
    with immediate(conn):
        conn.executemany(INSERT, rows)
    elapsed = time.perf_counter() - t0
    conn.close()
    return ROWS / elapsed


async def throughput(folder: Path) -> None:
    batched: list[float] = []
    per_row: list[float] = []
    plain: list[float] = []
    ceiling: list[float] = []
    transactions = 0
    for run in range(REPEATS):  # interleaved, so machine noise hits every variant alike
        rate, transactions = await batched_writer(folder / f"batched-{run}.db")
        batched.append(rate)
        per_row.append(await ledger_per_row(folder / f"per-row-{run}.db"))
        plain.append(await aiosqlite_per_row(folder / f"aiosqlite-{run}.db"))
        ceiling.append(await executemany_ceiling(folder / f"ceiling-{run}.db"))
    median = statistics.median
    out("ledger_batched_writer_rows_per_s (median)", median(batched), "rows/s")
    out("ledger_batched_writer_transactions", transactions, f"txns for {ROWS} rows")
    out("ledger_one_txn_per_row_rows_per_s (median)", median(per_row), "rows/s")
    out("aiosqlite_one_txn_per_row_rows_per_s (median)", median(plain), "rows/s")
    out("sqlite3_executemany_one_txn_rows_per_s (median, ceiling)", median(ceiling), "rows/s")
    out("batched_vs_ledger_one_txn_per_row_speedup", median(batched) / median(per_row), "x")
    out("batched_vs_aiosqlite_one_txn_per_row_speedup", median(batched) / median(plain), "x")


# ----- 2. process contention --------------------------------------------------------
def contention_worker(path: str, w: int, begin: str, barrier: Any, results: Any) -> None:
    conn = connect(Path(path))
    latencies: list[float] = []
    locked = 0
    barrier.wait()
    for i in range(TRANSACTIONS):
        t0 = time.perf_counter()
        try:
            conn.execute(begin)
            try:
                seen = conn.execute("SELECT count(*) FROM events").fetchone()[0]
                conn.execute(INSERT, (f"w{w}", "node_steered", f'{{"i":{i},"n":{seen}}}', 0.0))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            locked += 1
            continue
        latencies.append((time.perf_counter() - t0) * 1000)
    conn.close()
    results.put((locked, latencies))


def run_processes(
    target: Callable[..., None], args_of: Callable[[int], tuple[Any, ...]]
) -> list[Any]:
    """PROCESSES spawned `target(*args_of(w), barrier, results)`: all start writing at
    once (the barrier), each puts one outcome on `results`."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(*args_of(w), barrier, results)) for w in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    return outcomes


def contention(folder: Path, begin: str, label: str) -> None:
    path = folder / f"contention-{label}.db"
    asyncio.run(_create(path))
    outcomes = run_processes(contention_worker, lambda w: (str(path), w, begin))
    locked = sum(o[0] for o in outcomes)
    latencies = [x for o in outcomes for x in o[1]]
    rows = sqlite3.connect(path).execute("SELECT count(*) FROM events").fetchone()[0]
    total = PROCESSES * TRANSACTIONS
    out(f"contention_{label}_database_is_locked", locked, f"errors of {total} txns")
    out(f"contention_{label}_rows_committed", rows, f"of {total}")
    if latencies:
        out(f"contention_{label}_write_p50", statistics.median(latencies), "ms")
        out(f"contention_{label}_write_p99", pct(latencies, 0.99), "ms")


async def _create(path: Path) -> None:
    await (await open_ledger(path, create=True)).close()


# ----- 3. 60 async writer tasks -----------------------------------------------------
def async_worker(path: str, w: int, barrier: Any, results: Any) -> None:
    async def run() -> tuple[int, int, list[float]]:
        ledger = await open_ledger(Path(path))
        latencies: list[float] = []
        errors = {"locked": 0, "other": 0}
        barrier.wait()
        deadline = time.perf_counter() + ASYNC_SECONDS

        async def task(t: int) -> None:
            i = 0
            while time.perf_counter() < deadline:
                t0 = time.perf_counter()
                try:
                    await ledger.append_event(f"p{w}t{t}", EventType.NODE_HANDLED, {"i": i})
                except LedgerError as exc:
                    errors["locked" if "locked" in str(exc) else "other"] += 1
                latencies.append((time.perf_counter() - t0) * 1000)
                i += 1
                await asyncio.sleep(0.005)  # a writer that also does other work

        await asyncio.gather(*(task(t) for t in range(TASKS_PER_PROCESS)))
        await ledger.close()
        return errors["locked"], errors["other"], latencies

    results.put(asyncio.run(run()))


def async_tasks(folder: Path) -> None:
    path = folder / "tasks.db"
    asyncio.run(_create(path))
    outcomes = run_processes(async_worker, lambda w: (str(path), w))
    latencies = [x for o in outcomes for x in o[2]]
    tasks = PROCESSES * TASKS_PER_PROCESS
    out(f"tasks{tasks}_database_is_locked", sum(o[0] for o in outcomes), "errors")
    out(f"tasks{tasks}_other_errors", sum(o[1] for o in outcomes), "errors")
    out(f"tasks{tasks}_writes", len(latencies), f"in {ASYNC_SECONDS:g} s")
    out(f"tasks{tasks}_write_p50", statistics.median(latencies), "ms")
    out(f"tasks{tasks}_write_p99", pct(latencies, 0.99), "ms")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        folder = Path(tmp)
        asyncio.run(throughput(folder))
        contention(folder, "BEGIN IMMEDIATE", "immediate")
        contention(folder, "BEGIN", "deferred")
        async_tasks(folder)


if __name__ == "__main__":
    with calibrated():
        main()
