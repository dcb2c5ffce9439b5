"""The single writer of a Ledger: one task draining a queue into batched transactions.

Why not aiosqlite for writes: every aiosqlite call is a thread round trip (~170 µs),
while statements inside one transaction cost ~2 µs each in plain sqlite3. So the writer
owns a plain sqlite3 connection on its own single thread and hands it a whole batch as
ONE call: `BEGIN IMMEDIATE`, the jobs (each multi-statement job inside its own SAVEPOINT,
so a failing job rolls back only itself and gets its own exception), the coalesced usage
UPSERTs, `COMMIT`.
Jobs queued while a batch runs form the next batch, so batching grows with load and a
lone write still commits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from legion_tui.ledger.connection import connect, migrate
from legion_tui.ledger.errors import LedgerError
from legion_tui.ledger.rows import USAGE_UPSERT_SQL, usage_params
from legion_tui.model_records import Usage
from legion_tui.regular_files import file_identity

Apply = Callable[[sqlite3.Connection], Any]

log = logging.getLogger(__name__)

MAX_BATCH = 1000
IDLE_CHECKPOINT_SECONDS = 1.0
USAGE_LINGER_SECONDS = 0.05


@dataclass(slots=True)
class _Job:
    apply: Apply | None  # None: a wake-up for queued usage
    future: asyncio.Future[Any] | None  # None: a wake-up, nobody waits for it
    # A job of ONE statement needs no SAVEPOINT: SQLite already undoes a failed
    # statement as a whole. Jobs of several statements run inside their own SAVEPOINT.
    single_statement: bool = False


@dataclass(slots=True)
class WriterStats:
    """Honest counters, read by tests and the benchmark."""

    transactions: int = 0  # committed BEGIN IMMEDIATE … COMMIT batches
    jobs: int = 0  # jobs that ran (committed or individually rolled back)
    usage_rows: int = 0
    checkpoints: int = 0


_Outcome = tuple[bool, Any]  # (ok, value or exception)


class BatchWriter:
    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.path = path
        self.stats = WriterStats()
        self._clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-writer")
        self._conn: sqlite3.Connection | None = None
        self._queue: asyncio.Queue[_Job | None] = asyncio.Queue()  # None: stop
        self._usage: dict[str, Usage] = {}
        self._usage_wake_pending = False
        self._dirty = False  # committed since the last successful checkpoint
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._failure: str | None = None  # why the writer stopped, if it died
        # (dev, ino) of the -wal and -shm files this connection writes through: a WAL
        # deleted or replaced under the host takes every commit since the last
        # checkpoint with it (after a kill -9, 3 of 8 nodes and their events were lost).
        self._wal_identity: tuple[tuple[int, int] | None, ...] | None = None
        # (dev, ino) of the ledger itself: removed with its folder (which git, working in
        # the folder, may make again), a new connection would create an empty ledger at
        # the path and write into it ("no such table: nodes").
        self._ledger_identity: tuple[int, int] | None = None

    # ----- lifecycle -----------------------------------------------------------------
    async def start(self, *, create: bool) -> list[int]:
        """Open the connection, migrate, start the task; returns the migrations applied."""
        loop = asyncio.get_running_loop()
        try:
            self._conn = await loop.run_in_executor(self._executor, connect, self.path)
            applied = await loop.run_in_executor(
                self._executor, lambda: migrate(self._require_conn(), create=create)
            )
            self._wal_identity = self._wal_files()
            self._ledger_identity = file_identity(self.path)
        except LedgerError as exc:
            await self._close_conn()
            raise LedgerError(f"{self.path}: {exc}") from None
        except sqlite3.Error as exc:
            await self._close_conn()
            raise LedgerError(f"{self.path}: cannot open ledger ({exc})") from exc
        self._task = asyncio.create_task(self._run(), name=f"ledger-writer {self.path.name}")
        return applied

    async def close(self) -> None:
        """Drain everything queued, checkpoint, close. Safe to call twice."""
        if not self._closing:
            self._closing = True
            self._queue.put_nowait(None)
        if self._task is not None:
            await asyncio.shield(self._task)
        else:
            await self._close_conn()

    @property
    def closed(self) -> bool:
        return self._closing

    # ----- submitting ----------------------------------------------------------------
    async def submit(self, apply: Apply, *, single_statement: bool = False) -> Any:
        """Queue `apply(conn)` and wait until its transaction committed (or it failed).

        `single_statement=True` promises that `apply` executes exactly one statement.
        """
        self._check_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Job(apply, future, single_statement))
        return await future

    async def barrier(self) -> None:
        """Return once everything queued before this call is committed."""
        await self.submit(lambda _conn: None, single_statement=True)  # no statement at all

    def queue_usage(self, node_id: str, usage: Usage) -> None:
        """Fire and forget; repeated updates of one node coalesce to the latest.

        Usage alone wakes the writer only after USAGE_LINGER_SECONDS, so a burst of
        session appends over many nodes becomes one UPSERT batch; any other write (or
        flush/close) in the meantime takes the pending usage with it. Call it from the
        event loop's thread.
        """
        self._check_open()
        self._usage[node_id] = usage.copy()  # the caller may mutate theirs
        if not self._usage_wake_pending:
            self._usage_wake_pending = True
            asyncio.get_running_loop().call_later(
                USAGE_LINGER_SECONDS, self._queue.put_nowait, _Job(None, None)
            )

    def _check_open(self) -> None:
        if self._failure is not None:
            raise LedgerError(f"{self.path}: ledger writer stopped ({self._failure})")
        if self._closing:
            raise LedgerError(f"{self.path}: ledger is closed")

    # ----- the task ------------------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        batch: list[_Job] = []
        try:
            stop = False
            while not stop:
                timeout = IDLE_CHECKPOINT_SECONDS if self._dirty else None
                try:
                    async with asyncio.timeout(timeout):
                        first = await self._queue.get()
                except TimeoutError:
                    await loop.run_in_executor(self._executor, self._checkpoint)
                    continue
                # Wake-ups (no future) only make this loop run and take the pending usage.
                batch = [] if first is None or first.future is None else [first]
                stop = first is None
                while not stop and len(batch) < MAX_BATCH and not self._queue.empty():
                    job = self._queue.get_nowait()
                    stop = job is None
                    if job is not None and job.future is not None:
                        batch.append(job)
                usage, self._usage = self._usage, {}
                self._usage_wake_pending = False
                if not batch and not usage:
                    continue
                outcomes = await loop.run_in_executor(
                    self._executor, self._write_batch, batch, usage
                )
                _resolve(batch, outcomes)
                batch = []
        except BaseException as exc:
            # Never leave a caller waiting forever on a writer that died: fail every
            # queued job, refuse new ones, and let close() finish instead of re-raising.
            self._closing = True
            self._failure = repr(exc)
            error = LedgerError(f"{self.path}: ledger writer stopped ({exc!r})")
            _fail(batch, error)
            while not self._queue.empty():
                job = self._queue.get_nowait()
                if job is not None:
                    _fail([job], error)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            await self._close_conn()

    # ----- in the writer thread ------------------------------------------------------
    def _require_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise LedgerError(f"{self.path}: ledger is closed")
        return self._conn

    def _wal_files(self) -> tuple[tuple[int, int] | None, ...]:
        return tuple(file_identity(f"{self.path}{suffix}") for suffix in ("-wal", "-shm"))

    def _check_wal(self) -> None:
        """Never write through a WAL that is no longer the file at its path: the commits
        would land in a file nobody will read again (a `kill -9` loses them).

        Deleted (both files gone): what was committed is checkpointed into the ledger
        through the fds this connection still holds, and writing goes on through a new
        connection and a new WAL — said loudly. Replaced by other files: writes stop (a
        foreign WAL must not be applied to the ledger); the close checkpoints ours. The
        ledger itself deleted or replaced (its folder removed): writes stop, loudly."""
        if file_identity(self.path) != self._ledger_identity:
            self._ledger_gone()
        if self._wal_identity is None or None in self._wal_identity:
            return  # not in WAL mode yet (or never was): nothing to compare
        now = self._wal_files()
        if now == (None, None):
            conn = self._require_conn()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
            self._conn = None
            try:
                self._conn = connect(self.path, must_exist=True)
            except sqlite3.Error:  # the ledger went too, since the look above
                self._ledger_gone()
            self._wal_identity = self._wal_files()
            log.critical(
                "%s: the ledger's WAL files were deleted while this host was writing: what "
                "was committed is saved in the ledger, and writing goes on with a new WAL",
                self.path,
            )
            return
        if now != self._wal_identity:
            gone = [s for s, a, b in zip(("-wal", "-shm"), self._wal_identity, now, strict=True)
                    if a != b]  # fmt: skip
            message = (
                f"{self.path}: the ledger's {' and '.join(self.path.name + g for g in gone)} "
                "was deleted or replaced while this host was writing: writes stop here (they "
                "would be lost); what was committed is checkpointed into the ledger"
            )
            log.critical(message)
            raise LedgerError(message)

    def _ledger_gone(self) -> NoReturn:
        message = (
            f"{self.path}: the ledger was deleted or replaced while this host was writing "
            "(its folder removed?): writes stop here, there is nowhere to keep them"
        )
        log.critical(message)
        raise LedgerError(message)

    def _write_batch(self, jobs: list[_Job], usage: dict[str, Usage]) -> list[_Outcome]:
        self._check_wal()  # first: it may replace the connection
        conn = self._require_conn()
        outcomes: list[_Outcome] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in jobs:
                outcomes.append(self._apply_one(conn, job))
            if usage:
                now = self._clock()
                conn.executemany(
                    USAGE_UPSERT_SQL, [usage_params(n, u, now) for n, u in usage.items()]
                )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for node_id, u in usage.items():  # keep usage for the next batch
                self._usage.setdefault(node_id, u)
            error = LedgerError(f"{self.path}: write failed ({exc})")
            error.__cause__ = exc
            return [(False, error)] * len(jobs)
        if self._wal_identity is None or None in self._wal_identity:
            self._wal_identity = self._wal_files()  # the first commit made them
        self.stats.transactions += 1
        self.stats.jobs += len(jobs)
        self.stats.usage_rows += len(usage)
        self._dirty = True
        return outcomes

    def _apply_one(self, conn: sqlite3.Connection, job: _Job) -> _Outcome:
        if job.apply is None:  # pragma: no cover - wake-ups never reach a batch
            return (True, None)
        if not job.single_statement:
            conn.execute("SAVEPOINT job")
        try:
            value = job.apply(conn)
        except Exception as exc:
            if not job.single_statement:
                conn.execute("ROLLBACK TO job")
                conn.execute("RELEASE job")
            if isinstance(exc, sqlite3.Error):
                wrapped = LedgerError(f"{self.path}: {exc}")
                wrapped.__cause__ = exc
                return (False, wrapped)
            return (False, exc)
        if not job.single_statement:
            conn.execute("RELEASE job")
        return (True, value)

    def _checkpoint(self) -> None:
        """Idle `wal_checkpoint(TRUNCATE)`: keeps the WAL from growing without bound."""
        conn = self._require_conn()
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error:
            return  # e.g. another process holds the lock: try again after the next idle second
        if not busy:  # busy: a reader was in the way; same retry
            self._dirty = False
            self.stats.checkpoints += 1

    async def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:

            def close() -> None:
                # Best effort: closing the last connection checkpoints anyway.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.close()

            await asyncio.get_running_loop().run_in_executor(self._executor, close)
        self._executor.shutdown(wait=False)


def _resolve(jobs: list[_Job], outcomes: list[_Outcome]) -> None:
    for job, (ok, value) in zip(jobs, outcomes, strict=True):
        if job.future is None or job.future.done():  # a cancelled caller
            continue
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)


def _fail(jobs: list[_Job], error: LedgerError) -> None:
    for job in jobs:
        if job.future is not None and not job.future.done():
            job.future.set_exception(error)

