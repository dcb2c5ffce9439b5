"""The postman's cost per tick, on a real ledger file.

Run: .venv/bin/python bench/bench_mail_postman.py

Scenario A — a busy legion: 200 recipients, each with 5 ACCEPTED letters awaiting
evidence, 1 new PENDING letter per round, and a parsed session of 20 user texts.
One round = one `tick` per recipient. Then the same legion with nothing new: ticking
everyone anyway (the obvious loop) vs `MailService.round`, which ticks only recipients
that are dirty or whose model changed (its p95 is the full sweep of every 15th round).

Scenario B — one clogged mailbox: 2000 ACCEPTED letters nobody has read yet.
Ours checks a rotating batch of 20 per tick; the obvious alternative checks every
ACCEPTED letter every tick with a substring search ("does the session mention it?"),
which is both slower and wrong (quoting a letter would count as reading it).

Scenario C — the confirmation step alone (no ledger): 20 letters against 20 user texts,
exact set membership vs the substring scan.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from calibration import calibrated

from legion_tui.ledger.ledger import Ledger, open_ledger
from legion_tui.mail.envelope import format_envelope
from legion_tui.mail.postman import ModelDirectory, Postman
from legion_tui.mail.service import MailService
from legion_tui.model import MailKind, MailState, NodeStatus, Urgency
from legion_tui.model_records import Message, Node
from legion_tui.session.progress import SessionProgress
from legion_tui.state import LegionModel
from legion_tui.supervisor.state.mail_record import MailRecord
from legion_tui.supervisor.state.naming import Names
from legion_tui.supervisor.state.record import Record

RECIPIENTS = 200
ROUNDS = 15


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def node(node_id: str, parent: str | None) -> Node:
    return Node(
        id=node_id,
        run_id="r",
        parent_id=parent,
        name=node_id,
        path=node_id if parent is None else f"root/{node_id}",
        role="worker",
        kind="sim",
        backend="inprocess",
        status=NodeStatus.RUNNING,
        session_file=f"/tmp/{node_id}.jsonl",
    )


def make_model(count: int) -> LegionModel:
    model = LegionModel("r", "main")
    model.upsert(node("root", None))
    for i in range(count):
        nid = f"w{i}"
        model.upsert(node(nid, "root"))
        progress = SessionProgress()
        progress.recent_user_texts.extend(f"turn {t} of {nid}: " + "x" * 400 for t in range(20))
        model.set_progress(nid, progress)
    return model


async def handover(_node: Node, _envelope: str) -> bool:
    return True


class NaivePostman(Postman):
    """Checks every ACCEPTED letter each tick, substring match (the obvious alternative)."""

    def _batch(self, recipient: str, accepted: list[Message]) -> list[Message]:
        return accepted

    async def _confirm(
        self, node: Node, accepted: list[Message], phase_timeouts: object, report: object
    ) -> None:
        texts = list(self.directory.evidence(node.id) or ())
        for message in accepted:
            envelope = self.envelope(message)
            if any(envelope in text for text in texts):
                await self.store.move_mail(message.id, MailState.DELIVERED)


async def fill(ledger: Ledger, to: str, count: int, accept: bool) -> None:
    for i in range(count):
        letter = await ledger.send_mail(
            "root", to, MailKind.REPORT, Urgency.NORMAL, f"letter {i}", "body " * 40
        )
        if accept:
            await ledger.move_mail(letter.id, MailState.ACCEPTED)


async def rounds(postman: Postman, ledger: Ledger, ids: list[str], new_mail: bool) -> list[float]:
    times: list[float] = []
    for _ in range(ROUNDS):
        if new_mail:
            for nid in ids:
                await ledger.send_mail("root", nid, MailKind.REPORT, Urgency.NORMAL, "s", "b")
            await ledger.flush()
        start = time.perf_counter()
        for nid in ids:
            await postman.tick(nid)
        times.append((time.perf_counter() - start) * 1000)
    return times


async def scenario_a(folder: Path) -> None:
    ledger = await open_ledger(folder / "a.db", create=True)
    try:
        model = make_model(RECIPIENTS)
        ids = [f"w{i}" for i in range(RECIPIENTS)]
        for nid in ids:
            await fill(ledger, nid, 5, accept=True)
        await ledger.flush()
        postman = Postman(ledger, ModelDirectory(model), handover)
        busy = await rounds(postman, ledger, ids, True)
        idle = await rounds(postman, ledger, ids, False)
        record = Record(model, Names(model))
        record.open(ledger)
        service = MailService(MailRecord(record, model), model, lambda _nid: None)
        await service.round()  # the first round is a full sweep
        quiet: list[float] = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            await service.round()
            quiet.append((time.perf_counter() - start) * 1000)
        for label, times in (
            ("new_mail_each", busy),
            ("nothing_new", idle),
            ("nothing_new_service_loop", quiet),
        ):
            median = statistics.median(times)
            print(f"round_200_recipients_{label}_median: {median:.3f} ms")
            print(f"round_200_recipients_{label}_p95: {pct(times, 0.95):.1f} ms")
    finally:
        await ledger.close()


async def scenario_b(folder: Path) -> None:
    ledger = await open_ledger(folder / "b.db", create=True)
    try:
        model = make_model(1)
        await fill(ledger, "w0", 2000, accept=True)
        await ledger.flush()
        for label, cls in (("rotating_20_exact", Postman), ("naive_all_substring", NaivePostman)):
            postman = cls(ledger, ModelDirectory(model), handover)
            times: list[float] = []
            for _ in range(ROUNDS):
                start = time.perf_counter()
                await postman.tick("w0")
                times.append((time.perf_counter() - start) * 1000)
            print(f"clogged_2000_tick_{label}_median: {statistics.median(times):.2f} ms")
            print(f"clogged_2000_tick_{label}_p95: {pct(times, 0.95):.2f} ms")
    finally:
        await ledger.close()


def scenario_c() -> None:
    letters = [
        Message(
            i,
            "root",
            "w0",
            MailKind.REPORT,
            Urgency.NORMAL,
            f"s{i}",
            "body " * 40,
            MailState.ACCEPTED,
            None,
            0.0,
        )
        for i in range(20)
    ]
    texts: deque[str] = deque(("y" * 2000 for _ in range(20)), maxlen=20)

    def exact() -> None:
        evidence = frozenset(texts)
        for m in letters:
            _ = format_envelope(m, "root") in evidence

    def substring() -> None:
        for m in letters:
            envelope = format_envelope(m, "root")
            _ = any(envelope in t for t in texts)

    for label, fn in (("exact_set", exact), ("substring_scan", substring)):
        print(f"confirm_20x20_{label}_median: {bench(fn):.1f} us")


def bench(fn: Callable[[], None], repeat: int = 2000) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        await scenario_a(folder)
        await scenario_b(folder)
    scenario_c()


if __name__ == "__main__":
    with calibrated():
        asyncio.run(main())
