"""Round trips of every Ledger call on a real SQLite file, and the batching writer."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
from pathlib import Path

import pytest
from ledger_helpers import ledger_fixture, make_node, size_of  # noqa: F401 (a fixture)

from legion_tui.ledger import (
    Ledger,
    LedgerError,
    NameConflict,
    NotFound,
    connect,
    open_ledger,
    read_snapshot,
)
from legion_tui.model import EventType, MailKind, MailState, NodeStatus, Urgency
from legion_tui.model_records import MailboxStats, Usage

pytestmark = pytest.mark.unit


async def test_nodes_round_trip_exactly(ledger: Ledger) -> None:
    root = make_node("n-root", machine='{"phases":[]}', task="build it")
    child = make_node(
        "n-w0",
        parent_id="n-root",
        name="worker-0",
        status=NodeStatus.RUNNING,
        phase="implementing",
        phase_since=1_700_000_123.125,
        rework_count=2,
        session_file="/x/sessions/n-w0.jsonl",
        pid=4711,
        verdict='{"ok":true}',
        error="none",
        created_at=1_700_000_001.1,
        updated_at=1_700_000_002.2,
    )
    await ledger.insert_nodes([root, child])
    assert await ledger.get_nodes() == [root, child]
    assert await ledger.get_nodes("run-1") == [root, child]
    assert await ledger.get_nodes("other-run") == []
    assert await ledger.get_node("n-w0") == child
    assert await ledger.get_node("nope") is None


async def test_update_node_sets_fields_and_updated_at(ledger: Ledger) -> None:
    await ledger.insert_nodes([make_node("n1")])
    updated = await ledger.update_node("n1", status="settled", machine={"start": "a"}, pid=9)
    assert updated.status is NodeStatus.SETTLED
    assert updated.machine == '{"start":"a"}'
    assert updated.pid == 9
    assert updated.updated_at == 1_800_000_000.0  # first tick of the injected clock
    assert await ledger.get_node("n1") == updated


async def test_update_node_refusals_write_nothing(ledger: Ledger) -> None:
    await ledger.insert_nodes([make_node("n1")])
    before = ledger.stats.transactions
    with pytest.raises(TypeError, match="colour"):
        await ledger.update_node("n1", colour="red")
    with pytest.raises(ValueError, match="zombie"):
        await ledger.update_node("n1", status="zombie")
    with pytest.raises(ValueError, match="unknown role"):
        await ledger.update_node("n1", role="general")
    assert ledger.stats.transactions == before  # refused before anything was queued
    with pytest.raises(NotFound, match="n-missing"):
        await ledger.update_node("n-missing", status="running")
    assert (await ledger.get_node("n1")) == make_node("n1")


async def test_sibling_names_are_unique_including_roots(ledger: Ledger) -> None:
    await ledger.insert_nodes([make_node("r1", name="root")])
    with pytest.raises(NameConflict):  # a NULL parent is not exempt
        await ledger.insert_nodes([make_node("r2", name="root")])
    await ledger.insert_nodes([make_node("r3", name="root", run_id="run-2")])  # other run
    await ledger.insert_nodes([make_node("c1", parent_id="r1", name="w")])
    await ledger.insert_nodes([make_node("c2", parent_id="r3", name="w", run_id="run-2")])
    with pytest.raises(NameConflict):
        await ledger.insert_nodes([make_node("c3", parent_id="r1", name="w")])
    await ledger.insert_nodes([make_node("c4", parent_id="r1", name="v")])
    with pytest.raises(NameConflict):  # renaming onto a taken name
        await ledger.update_node("c4", name="w")
    with pytest.raises(LedgerError, match="node id already exists"):
        await ledger.insert_nodes([make_node("c1", parent_id="r1", name="x")])


async def test_insert_nodes_is_all_or_nothing(ledger: Ledger) -> None:
    await ledger.insert_nodes([make_node("r1", name="root")])
    batch = [make_node("a", parent_id="r1"), make_node("b", parent_id="r1", name="a")]
    with pytest.raises(NameConflict):
        await ledger.insert_nodes(batch)
    assert [n.id for n in await ledger.get_nodes()] == ["r1"]
    with pytest.raises(ValueError, match="unknown kind"):
        await ledger.insert_nodes([make_node("k", kind="docker")])  # type: ignore[arg-type]


async def test_events_round_trip_filter_and_limit(ledger: Ledger) -> None:
    e1 = await ledger.append_event("n1", EventType.NODE_LAUNCHED, {"pid": 1, "argv": ["a"]})
    e2 = await ledger.append_event(None, EventType.BUDGET_EXCEEDED, {"limit": "maxDepth"})
    e3 = await ledger.append_event("n1", EventType.PHASE_CHANGE)
    assert e1.data == {"pid": 1, "argv": ["a"]} and e3.data == {}
    assert e1.id < e2.id < e3.id
    assert await ledger.get_events() == [e1, e2, e3]
    assert await ledger.get_events("n1") == [e1, e3]
    assert await ledger.get_events(types=[EventType.BUDGET_EXCEEDED]) == [e2]
    assert await ledger.get_events("n1", types={EventType.PHASE_CHANGE}) == [e3]
    assert await ledger.get_events(types=[]) == []
    assert await ledger.get_events(limit=2) == [e2, e3]  # the newest two, oldest first
    with pytest.raises(ValueError):
        await ledger.append_event("n1", "node_exploded")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await ledger.append_event("n1", EventType.NODE_HANDLED, {"x": object()})


async def test_messages_directions_pending_and_stats(ledger: Ledger) -> None:
    m1 = await ledger.send_mail("a", "b", MailKind.QUESTION, Urgency.NORMAL, "q?", "body 1")
    m2 = await ledger.send_mail("b", "a", MailKind.REPORT, Urgency.ACTION_NEEDED, "r", "body 2")
    m3 = await ledger.send_mail("c", "b", MailKind.NOTICE, Urgency.NORMAL, "n", "")
    assert (m1.delivered, m1.delivered_at, m1.kind) == (MailState.PENDING, None, MailKind.QUESTION)
    assert await ledger.get_messages("b") == [m1, m2, m3]
    assert await ledger.get_messages("b", direction="in") == [m1, m3]
    assert await ledger.get_messages("b", direction="out") == [m2]
    m1 = await ledger.move_mail(m1.id, MailState.ACCEPTED)
    assert await ledger.get_pending_mail("b", [MailState.PENDING]) == [m3]
    assert await ledger.get_pending_mail("b", {MailState.PENDING, MailState.ACCEPTED}) == [m1, m3]
    assert await ledger.get_pending_mail("b", []) == []
    await ledger.move_mail(m3.id, MailState.BOUNCED)
    assert await ledger.mailbox_stats("b") == MailboxStats(accepted=1, bounced=1)
    assert await ledger.mailbox_stats("nobody") == MailboxStats()
    sent = await ledger.get_events(types=[EventType.MAIL_SENT])
    assert [(e.node_id, e.data["message_id"], e.data["to"]) for e in sent] == [
        ("a", m1.id, "b"),
        ("b", m2.id, "a"),
        ("c", m3.id, "b"),
    ]
    with pytest.raises(ValueError):
        await ledger.get_messages("b", direction="sideways")  # type: ignore[arg-type]


def test_a_usage_copy_keeps_every_field_in_an_object_of_its_own() -> None:
    """The writer keeps `Usage.copy()` of each queued usage (issue 35: built field by
    field, not by `dataclasses.replace`); a field it missed would reach the ledger as
    its default."""
    usage = Usage(**{f.name: 10 + i for i, f in enumerate(dataclasses.fields(Usage))})
    copy = usage.copy()
    assert copy == usage and copy is not usage


async def test_usage_is_coalesced_and_upserted(ledger: Ledger) -> None:
    usage = Usage(input=10, output=20, cache_read=3, cache_write=4, cost=0.5, turns=1)
    ledger.queue_usage("n1", usage)
    usage.output = 999  # the ledger copied it: mutating the caller's object changes nothing
    for out in (30, 40, 50):
        ledger.queue_usage("n2", Usage(output=out, generation_ms=1234.5))
    await ledger.flush()
    assert await ledger.get_usage("n1") == Usage(
        input=10, output=20, cache_read=3, cache_write=4, cost=0.5, turns=1
    )
    assert await ledger.get_usage("n2") == Usage(output=50, generation_ms=1234.5)
    assert ledger.stats.usage_rows == 2  # three n2 updates coalesced into one row write
    ledger.queue_usage("n2", Usage(output=60))
    await ledger.flush()
    assert (await ledger.get_usage("n2")) == Usage(output=60)
    assert await ledger.get_usage("n3") is None


async def test_concurrent_writes_are_batched(ledger: Ledger) -> None:
    before = ledger.stats.transactions
    for i in range(20):  # awaited one by one: nothing to batch, one transaction each
        await ledger.append_event("seq", EventType.NODE_STEERED, {"i": i})
    assert ledger.stats.transactions - before == 20

    before = ledger.stats.transactions
    events = await asyncio.gather(
        *(ledger.append_event(f"n{i % 7}", EventType.NODE_HANDLED, {"i": i}) for i in range(500))
    )
    committed = ledger.stats.transactions - before
    assert committed <= 5, committed
    assert len({e.id for e in events}) == 500
    stored = await ledger.get_events(types=[EventType.NODE_HANDLED], limit=1000)
    assert sorted(e.data["i"] for e in stored) == list(range(500))


async def test_a_failing_write_does_not_fail_its_batch(ledger: Ledger) -> None:
    await ledger.insert_nodes([make_node("r1", name="root")])
    before = ledger.stats.transactions
    results = await asyncio.gather(
        ledger.append_event("r1", EventType.NODE_LAUNCHED),
        ledger.insert_nodes([make_node("r2", name="root")]),  # conflicts
        ledger.update_node("missing", status="running"),  # not found
        ledger.append_event("r1", EventType.NODE_SETTLED),
        return_exceptions=True,
    )
    assert ledger.stats.transactions - before == 1  # one transaction carried all four
    assert isinstance(results[1], NameConflict)
    assert isinstance(results[2], NotFound)
    types = [e.type for e in await ledger.get_events("r1")]
    assert types == [EventType.NODE_LAUNCHED, EventType.NODE_SETTLED]
    assert [n.id for n in await ledger.get_nodes()] == ["r1"]


async def test_close_drains_queued_writes_and_refuses_new_ones(tmp_path: Path) -> None:
    path = tmp_path / "legion.db"
    ledger = await open_ledger(path, create=True)
    await ledger.insert_nodes([make_node("n1")])
    ledger.queue_usage("n1", Usage(output=7))
    pending = asyncio.ensure_future(ledger.append_event("n1", EventType.NODE_RETIRED))
    await asyncio.sleep(0)  # let the append enqueue itself before close
    await ledger.close()
    assert pending.done() and pending.result().type is EventType.NODE_RETIRED
    await ledger.close()  # idempotent
    with pytest.raises(LedgerError, match="closed"):
        await ledger.append_event("n1", EventType.NODE_HANDLED)
    with pytest.raises(LedgerError, match="closed"):
        ledger.queue_usage("n1", Usage())
    with pytest.raises(LedgerError, match="closed"):
        await ledger.get_nodes()
    # The writer was the last connection: it checkpointed and removed -wal/-shm.
    assert sorted(os.listdir(tmp_path)) == ["legion.db"]
    nodes, usage = read_snapshot(path)
    assert [n.id for n in nodes] == ["n1"] and usage == {"n1": Usage(output=7)}
    async with await open_ledger(path) as again:
        assert [e.type for e in await again.get_events("n1")] == [EventType.NODE_RETIRED]


async def test_idle_checkpoint_truncates_the_wal(ledger: Ledger) -> None:
    wal = f"{ledger.path}-wal"
    await ledger.append_event("n1", EventType.NODE_LAUNCHED, {"pad": "x" * 5000})
    assert size_of(wal) > 0
    for _ in range(100):  # bounded poll: the writer checkpoints after ~1 s of idleness
        if ledger.stats.checkpoints:
            break
        await asyncio.sleep(0.05)
    assert ledger.stats.checkpoints >= 1
    assert size_of(wal) == 0
    assert len(await ledger.get_events()) == 1


async def test_read_snapshot_of_a_live_ledger_sees_committed_rows(ledger: Ledger) -> None:
    await ledger.insert_nodes([make_node("n1"), make_node("n2", parent_id="n1")])
    ledger.queue_usage("n2", Usage(turns=3))
    await ledger.flush()
    nodes, usage = read_snapshot(ledger.path)
    assert nodes == await ledger.get_nodes()
    assert usage == {"n2": Usage(turns=3)}


async def test_reader_connection_cannot_write(ledger: Ledger) -> None:
    assert ledger._reader is not None
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await ledger._reader.execute("DELETE FROM nodes")


async def test_a_failed_batch_fails_each_caller_and_the_writer_carries_on(
    tmp_path: Path,
) -> None:
    ledger = await open_ledger(tmp_path / "legion.db", create=True)
    writer = ledger._writer
    # Fault injection: a short busy_timeout (on the writer's own thread) and another
    # connection holding the write lock make the next batch's BEGIN IMMEDIATE fail.
    conn = writer._conn
    assert conn is not None
    await asyncio.get_running_loop().run_in_executor(
        writer._executor, conn.execute, "PRAGMA busy_timeout = 20"
    )
    other = connect(ledger.path)
    other.execute("BEGIN IMMEDIATE")
    ledger.queue_usage("n1", Usage(output=1))
    results = await asyncio.gather(
        ledger.append_event("n1", EventType.NODE_LAUNCHED),
        ledger.send_mail("a", "b", MailKind.NOTICE, Urgency.NORMAL, "s", "b"),
        return_exceptions=True,
    )
    assert all(isinstance(r, LedgerError) and "locked" in str(r) for r in results), results
    other.execute("ROLLBACK")
    other.close()
    event = await ledger.append_event("n1", EventType.NODE_SETTLED)  # the writer still serves
    assert await ledger.get_events() == [event]
    assert await ledger.get_messages("a") == []
    assert await ledger.get_usage("n1") == Usage(output=1)  # kept for the next batch
    await ledger.close()


async def test_a_dead_writer_fails_callers_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = await open_ledger(tmp_path / "legion.db", create=True)

    def broken(*_args: object) -> None:
        raise RuntimeError("bug in a batch")

    monkeypatch.setattr(ledger._writer, "_write_batch", broken)
    with pytest.raises(LedgerError, match=r"writer stopped.*bug in a batch"):
        await asyncio.wait_for(ledger.append_event("n1", EventType.NODE_LAUNCHED), 5)
    with pytest.raises(LedgerError, match="writer stopped"):
        await ledger.append_event("n1", EventType.NODE_LAUNCHED)
    await asyncio.wait_for(ledger.close(), 5)  # closes cleanly, no exception re-raised


async def test_queued_usage_lands_without_a_flush(ledger: Ledger) -> None:
    before = ledger.stats.transactions
    for i in range(50):  # a burst over many nodes: one linger, one batch
        ledger.queue_usage(f"n{i}", Usage(output=i))
    for _ in range(100):  # bounded poll: the usage linger is 50 ms
        if await ledger.get_usage("n49") is not None:
            break
        await asyncio.sleep(0.02)
    assert await ledger.get_usage("n49") == Usage(output=49)
    assert ledger.stats.transactions - before == 1
    assert ledger.stats.usage_rows == 50
