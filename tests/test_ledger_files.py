"""Recognising ledger files: refusals leave files byte-identical; creation; migrations."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from ledger_helpers import file_snapshot, make_node, migrate_worker, run_workers, size_of

from legion_tui.ledger import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    LedgerError,
    connect,
    immediate,
    migrate,
    open_ledger,
    read_snapshot,
)
from legion_tui.ledger.rows import NODE_COLUMNS, NODE_INSERT_SQL, node_params
from legion_tui.model import EventType, MailState, NodeStatus
from legion_tui.model_records import Node, Usage

pytestmark = pytest.mark.unit


async def _make_ledger(path: Path, events: int = 0) -> None:
    async with await open_ledger(path, create=True) as ledger:
        await ledger.insert_nodes([make_node("n1")])
        for i in range(events):
            await ledger.append_event("n1", EventType.NODE_HANDLED, {"pad": "y" * 500, "i": i})


def _foreign_db(path: Path, *, wal: bool = False, app_id: int = 0, version: int = 0) -> None:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, blob BLOB)")
    conn.execute("INSERT INTO photos (blob) VALUES (randomblob(3000))")
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(3 * 4096))


def _text(path: Path) -> None:
    path.write_text("name,colour\nworker,red\n")


async def _truncated_to_pages(path: Path) -> None:
    await _make_ledger(path, events=60)
    assert size_of(path) >= 8 * 4096
    os.truncate(path, 4 * 4096)  # whole pages, but fewer than the header says


async def _truncated_mid_page(path: Path) -> None:
    await _make_ledger(path)
    os.truncate(path, size_of(path) - 1000)


async def _corrupt_schema_page(path: Path) -> None:
    await _make_ledger(path)
    with path.open("r+b") as f:  # keep the 100-byte header, smash the rest of page 1
        f.seek(100)
        f.write(b"\xa5" * 3996)


async def _newer_version(path: Path) -> None:
    await _make_ledger(path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()


def _empty_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 0")
    conn.execute("VACUUM")  # materialise a valid header with no tables
    conn.close()


async def _missing_table(path: Path) -> None:
    await _make_ledger(path)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE events")
    conn.commit()
    conn.close()


def _sync(fn: Callable[[Path], None]) -> Callable[[Path], object]:
    async def run(path: Path) -> None:
        fn(path)

    return run


BAD_FILES: dict[str, tuple[Callable[[Path], object], str]] = {
    "foreign sqlite": (_sync(_foreign_db), r"another application \(tables: photos\)"),
    "foreign sqlite in WAL mode": (
        _sync(lambda p: _foreign_db(p, wal=True)),
        r"another application \(tables: photos\)",
    ),
    "foreign sqlite with an application_id": (
        _sync(lambda p: _foreign_db(p, app_id=0x0F055112, version=7)),
        "application_id 0x0f055112",
    ),
    "garbage": (_sync(_garbage), "not an SQLite database"),
    "a text file": (_sync(_text), "not an SQLite database"),
    "truncated to whole pages": (_truncated_to_pages, "truncated: the header says"),
    "truncated mid-page": (_truncated_mid_page, "truncated or corrupt"),
    "corrupt schema page": (_corrupt_schema_page, "corrupt"),
    "newer user_version": (_newer_version, f"version {SCHEMA_VERSION + 1} is newer"),
    "ledger missing a table": (_missing_table, r"corrupt legion ledger \(tables missing: events\)"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
async def test_bad_files_are_refused_and_left_byte_identical(tmp_path: Path, case: str) -> None:
    make, message = BAD_FILES[case]
    path = tmp_path / "legion.db"
    await make(path)  # type: ignore[misc]
    before = file_snapshot(path)
    for create in (False, True):
        with pytest.raises(LedgerError, match=message) as caught:
            await open_ledger(path, create=create)
        assert str(path) in str(caught.value)
        assert file_snapshot(path) == before  # same bytes, and no -wal/-shm appeared
    with pytest.raises(LedgerError, match=message):
        read_snapshot(path)
    assert file_snapshot(path) == before


async def test_missing_file_is_created_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    with pytest.raises(LedgerError, match="does not exist"):
        await open_ledger(path)
    with pytest.raises(LedgerError, match="does not exist"):
        read_snapshot(path)
    assert not path.exists()
    async with await open_ledger(path, create=True) as ledger:
        assert ledger.migrations_applied == list(range(1, SCHEMA_VERSION + 1))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("make", [_zero_bytes, _empty_sqlite], ids=["zero bytes", "no tables"])
async def test_blank_files_need_create(tmp_path: Path, make: Callable[[Path], None]) -> None:
    path = tmp_path / "legion.db"
    make(path)
    before = file_snapshot(path)
    with pytest.raises(LedgerError, match="is empty"):
        await open_ledger(path)
    assert file_snapshot(path) == before
    async with await open_ledger(path, create=True) as ledger:
        assert ledger.migrations_applied == list(range(1, SCHEMA_VERSION + 1))


async def test_a_live_ledger_is_recognised_though_its_main_header_is_stale(
    tmp_path: Path,
) -> None:
    path = tmp_path / "legion.db"
    async with await open_ledger(path, create=True) as first:
        await first.insert_nodes([make_node("n1")])
        # Everything is still in the WAL: the main file's header says "no identity".
        header = file_snapshot(path)[0][:100]
        assert header[68:72] == b"\x00\x00\x00\x00"
        async with await open_ledger(path) as second:
            assert [n.id for n in await second.get_nodes()] == ["n1"]
            assert second.migrations_applied == []
        assert [n.id for n in read_snapshot(path)[0]] == ["n1"]


async def test_every_connection_gets_the_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    await _make_ledger(path)
    conn = connect(path)
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.isolation_level is None
    conn.close()
    async with await open_ledger(path) as ledger:
        assert ledger._reader is not None
        rows = await ledger._reader.execute_fetchall("PRAGMA busy_timeout")
        assert next(iter(rows))[0] == 5000


# The node columns of v1–v4 (v5 added `attempt_group`, the last): what an old host wrote.
_OLD_COLUMNS = NODE_COLUMNS[: NODE_COLUMNS.index("attempt_group")]


def _insert_old(conn: sqlite3.Connection, node: Node) -> None:
    marks = ", ".join("?" for _ in _OLD_COLUMNS)
    conn.execute(f"INSERT INTO nodes ({', '.join(_OLD_COLUMNS)}) VALUES ({marks})",
                 node_params(node)[: len(_OLD_COLUMNS)])  # fmt: skip


def _v1_ledger(path: Path) -> None:
    conn = connect(path)
    assert migrate(conn, create=True, target=1) == [1]
    with immediate(conn):
        _insert_old(conn, make_node("old", status=NodeStatus.SETTLED))
        conn.execute(
            "INSERT INTO messages (from_node, to_node, kind, urgency, subject, body, delivered,"
            " created_at) VALUES ('a', 'old', 'notice', 'normal', 's', 'b', 1, 5.0)"
        )
    conn.close()


async def test_migration_v1_to_v3_applies_once_and_keeps_rows(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    _v1_ledger(path)
    nodes, usage = read_snapshot(path)  # a v1 ledger is readable before migrating
    assert [n.id for n in nodes] == ["old"] and usage == {}
    async with await open_ledger(path) as ledger:
        assert ledger.migrations_applied == [2, 3, 4, 5]
        assert (await ledger.get_node("old")) == make_node("old", status=NodeStatus.SETTLED)
        (letter,) = await ledger.get_messages("old")
        assert letter.delivered is MailState.ACCEPTED  # a v1 `1` reads as accepted
        ledger.queue_usage("old", Usage(output=3))  # the v2 table exists
        await ledger.flush()
    async with await open_ledger(path) as ledger:
        assert ledger.migrations_applied == []
        assert await ledger.get_usage("old") == Usage(output=3)


async def test_a_v2_ledger_takes_claude_and_codex_nodes_after_its_migration(
    tmp_path: Path,
) -> None:
    """v2 checked `kind IN ('sim','pi','exec')`: a run reopened after an upgrade must take
    the new agents, and keep its rows and indexes (the sibling-name rule still holds)."""
    path = tmp_path / "legion.db"
    conn = connect(path)
    assert migrate(conn, create=True, target=2) == [1, 2]
    with immediate(conn):
        _insert_old(conn, make_node("old", status=NodeStatus.SETTLED))
    with pytest.raises(sqlite3.IntegrityError), immediate(conn):
        _insert_old(conn, make_node("cc", kind="claude"))
    conn.close()
    async with await open_ledger(path) as ledger:
        assert ledger.migrations_applied == [3, 4, 5]
        assert (await ledger.get_node("old")) == make_node("old", status=NodeStatus.SETTLED)
    conn = connect(path)
    with immediate(conn):
        conn.execute(
            NODE_INSERT_SQL,
            node_params(make_node("cc", kind="claude", backend="claude-stream")),
        )
        conn.execute(
            NODE_INSERT_SQL,
            node_params(make_node("cx", kind="codex", backend="codex-app-server")),
        )
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"), immediate(conn):
        conn.execute(NODE_INSERT_SQL, node_params(make_node("twin", name="old")))
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"nodes_sibling_name", "nodes_run"} <= indexes
    conn.close()


def test_concurrent_migrators_apply_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    _v1_ledger(path)
    outcomes = run_workers(8, migrate_worker, lambda _w: (str(path),), timeout=60)
    assert all(status == "ok" for status, _ in outcomes), outcomes
    applied = sorted(tuple(v) for _, v in outcomes)
    assert applied == [()] * 7 + [(2, 3, 4, 5)]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        (
            NODE_INSERT_SQL,
            (*node_params(make_node("z"))[:8], "zombie", *node_params(make_node("z"))[9:]),
        ),
        (
            NODE_INSERT_SQL,
            (*node_params(make_node("z"))[:5], "general", *node_params(make_node("z"))[6:]),
        ),
        ("INSERT INTO events (node_id, type, data, at) VALUES ('n', 'node_exploded', '{}', 0)", ()),
        ("INSERT INTO events (node_id, type, data, at) VALUES ('n', 'node_settled', '{x', 0)", ()),
        (
            "INSERT INTO messages (from_node, to_node, kind, urgency, subject, body, delivered,"
            " created_at) VALUES ('a', 'b', 'notice', 'normal', 's', 'b', 5, 0)",
            (),
        ),
        (
            "INSERT INTO messages (from_node, to_node, kind, urgency, subject, body, delivered,"
            " created_at) VALUES ('a', 'b', 'gossip', 'normal', 's', 'b', 0, 0)",
            (),
        ),
    ],
    ids=["status", "role", "event type", "event json", "delivered", "mail kind"],
)
def test_check_constraints_reject_values_outside_the_closed_sets(
    tmp_path: Path, sql: str, params: tuple[object, ...]
) -> None:
    path = tmp_path / "legion.db"
    conn = connect(path)
    migrate(conn, create=True)
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"), immediate(conn):
        conn.execute(sql, params)
    conn.close()


def test_check_constraints_accept_every_member_of_the_closed_sets(tmp_path: Path) -> None:
    conn = connect(tmp_path / "legion.db")
    migrate(conn, create=True)
    with immediate(conn):
        for i, status in enumerate(NodeStatus):
            conn.execute(NODE_INSERT_SQL, node_params(make_node(f"n{i}", status=status)))
        for event_type in EventType:
            conn.execute(
                "INSERT INTO events (node_id, type, data, at) VALUES ('n', ?, '{}', 0)",
                (event_type.value,),
            )
        for state in MailState:
            conn.execute(
                "INSERT INTO messages (from_node, to_node, kind, urgency, subject, body,"
                " delivered, created_at) VALUES ('a', 'b', 'notice', 'normal', 's', 'b', ?, 0)",
                (state.value,),
            )
    assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == len(EventType) == 17
    conn.close()


async def test_a_v3_ledger_takes_checks_events_after_its_migration(tmp_path: Path) -> None:
    """v3's events checked the types of its day: a run reopened after an upgrade must
    record `checks` (issue 34) and keep its events and their index."""
    from legion_tui.ledger.schema import check_in

    path = tmp_path / "legion.db"
    conn = connect(path)
    assert migrate(conn, create=True, target=3) == [1, 2, 3]
    old_types = [t for t in EventType if t is not EventType.CHECKS]
    with immediate(conn):  # the events table as v3 made it (without `checks`)
        conn.execute("DROP TABLE events")
        conn.execute(f"""CREATE TABLE events (id INTEGER PRIMARY KEY, node_id TEXT,
            type TEXT NOT NULL {check_in("type", old_types)},
            data TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(data)), at REAL NOT NULL)""")
        conn.execute("CREATE INDEX events_node ON events (node_id, id)")
        conn.execute("INSERT INTO events (node_id, type, data, at) "
                     "VALUES ('old', 'node_settled', '{\"a\": 1}', 5.0)")  # fmt: skip
    with pytest.raises(sqlite3.IntegrityError), immediate(conn):
        conn.execute("INSERT INTO events (node_id, type, data, at) "
                     "VALUES ('old', 'checks', '{}', 6.0)")  # fmt: skip
    conn.close()
    async with await open_ledger(path) as ledger:
        assert ledger.migrations_applied == [4, 5]
        (kept,) = await ledger.get_events("old")
        assert (kept.type, kept.data, kept.at) == (EventType.NODE_SETTLED, {"a": 1}, 5.0)
    conn = connect(path)
    with immediate(conn):
        conn.execute("INSERT INTO events (node_id, type, data, at) "
                     "VALUES ('old', 'checks', '{}', 6.0)")  # fmt: skip
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "events_node" in indexes
    conn.close()


async def test_a_v4_ledger_is_read_as_it_is_then_takes_attempt_groups(tmp_path: Path) -> None:
    """v4 had no `attempt_group`: a reader that does not migrate (`legion status` of a run
    an older host wrote) reads its nodes with none; the next host adds the column and
    keeps the rows, and a fan-out's attempts then record their group."""
    path = tmp_path / "legion.db"
    conn = connect(path)
    assert migrate(conn, create=True, target=4) == [1, 2, 3, 4]
    with immediate(conn):
        _insert_old(conn, make_node("old", status=NodeStatus.SETTLED))
    conn.close()
    (read, *_), _usage = read_snapshot(path)
    assert read == make_node("old", status=NodeStatus.SETTLED) and read.attempt_group is None
    async with await open_ledger(path) as ledger:
        assert ledger.migrations_applied == [5]
        await ledger.insert_nodes([make_node("try", name="fix.pi-1", attempt_group="fix")])
        assert (await ledger.get_node("try")).attempt_group == "fix"  # type: ignore[union-attr]
    nodes, _usage = read_snapshot(path)
    assert [(n.id, n.attempt_group) for n in nodes] == [("old", None), ("try", "fix")]
