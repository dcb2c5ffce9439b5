"""The advisory phase clock: one `phase_timeout` per stint (SPEC §6.4, upstream #333/#357/#358).

A *stint* is one stay of a team in one phase: `(node, phase, phase_since)`. Re-entering
the same phase moves `phase_since`, and so does a revival (`revive_stint`: a team woken
after it ended continues in its phase, but on a new clock — upstream #357), so each of
those is a new stint that may time out again.

When a stint outlives its limit (operator setting → machine `timeoutMs` → built-in
15/60/30/15 min → never; `resolve_timeout_ms` of the phases package decides), the tracker:

1. mails the team's parent ONE `notice` (`action-needed`) whose subject starts with
   `Phase timeout:` — the prefix the postman keys on to make it OBSOLETE once the team
   leaves that stint;
2. then writes ONE `phase_timeout` event `{phase, phase_since, limit_ms, elapsed_ms,
   message_id}` — the de-dup key, and the record the postman's OBSOLETE rule reads.

The notice comes first (upstream PR #363): if it cannot be placed, no key is written and
the next check tries again, instead of a stint going silent. A timeout only reports: the
tracker has no way to stop, abort or move anything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from legion_tui import receipts
from legion_tui.ledger.ports import EventReader, EventWriter, MailSender, NodeUpdater
from legion_tui.model import EventType, MailKind, Urgency
from legion_tui.model_records import Node
from legion_tui.phases.builtin import resolve_timeout_ms
from legion_tui.phases.load import machine_from_json
from legion_tui.phases.machine import TERMINALS, Machine

__all__ = [
    "CHECK_SECONDS",
    "PhaseClock",
    "Stint",
    "TimeoutReport",
    "TimeoutStore",
    "restore_stint",
    "revive_stint",
]

log = logging.getLogger(__name__)

CHECK_SECONDS = 10.0  # the smallest built-in limit is 15 min; 10 s late is nothing


class TimeoutStore(MailSender, EventWriter, EventReader, Protocol):
    """The part of `legion_tui.ledger.Ledger` the clock uses."""


class ReviveStore(NodeUpdater, EventWriter, Protocol):
    """The part of `legion_tui.ledger.Ledger` a revival uses."""


@dataclass(frozen=True, slots=True)
class Stint:
    node_id: str
    phase: str
    phase_since: float


@dataclass(frozen=True, slots=True)
class TimeoutReport:
    stint: Stint
    limit_ms: int
    elapsed_ms: int
    message_id: int | None  # None when the team has no parent to tell


def _machine_of(node: Node, cache: dict[str, Machine | None]) -> Machine | None:
    """The team's declared machine (nodes.machine JSON); an unreadable one counts as none,
    which leaves the built-in clocks — a bad row must not silence every clock."""
    if node.machine is None:
        return None
    if node.machine not in cache:
        try:
            cache[node.machine] = machine_from_json(node.machine)
        except ValueError:
            log.warning("node %s: stored phase machine is unreadable", node.path)
            cache[node.machine] = None
    return cache[node.machine]


class PhaseClock:
    def __init__(
        self,
        store: TimeoutStore,
        *,
        operator: Mapping[str, int] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`operator`: ONLY the phase timeouts the operator wrote (settings.toml
        `[phaseTimeouts]`, `Settings.phase_timeouts`) — never a default-filled table."""
        self.store = store
        self.operator = operator
        self.clock = clock
        self._reported: set[Stint] = set()
        self._machines: dict[str, Machine | None] = {}

    def limit_ms(self, node: Node) -> int | None:
        if node.phase is None:
            return None
        return resolve_timeout_ms(
            node.phase, machine=_machine_of(node, self._machines), operator=self.operator
        )

    async def _already_reported(self, stint: Stint) -> bool:
        if stint in self._reported:
            return True
        # The ledger is the durable key: a reopened run does not announce a stint twice.
        for event in await self.store.get_events(stint.node_id, types=(EventType.PHASE_TIMEOUT,)):
            if (
                event.data.get("phase") == stint.phase
                and event.data.get("phase_since") == stint.phase_since
            ):
                self._reported.add(stint)
                return True
        return False

    async def check(self, node: Node) -> TimeoutReport | None:
        """Report `node`'s stint if it has outlived its limit and was not reported yet."""
        if node.phase is None or node.phase_since is None or node.phase in TERMINALS:
            return None
        if not node.live:
            return None  # an ended team's clock has stopped
        limit = self.limit_ms(node)
        if limit is None:
            return None
        elapsed_ms = int((self.clock() - node.phase_since) * 1000)
        if elapsed_ms < limit:
            return None
        stint = Stint(node.id, node.phase, node.phase_since)
        if await self._already_reported(stint):
            return None
        message_id: int | None = None
        if node.parent_id is not None:
            elapsed_s, limit_s = elapsed_ms / 1000, limit / 1000
            letter = await self.store.send_mail(
                node.id,
                node.parent_id,
                MailKind.NOTICE,
                Urgency.ACTION_NEEDED,
                receipts.phase_timeout_subject(node.name, node.phase, elapsed_s),
                receipts.phase_timeout_body(node.name, node.phase, elapsed_s, limit_s),
            )
            message_id = letter.id
        await self.store.append_event(
            node.id,
            EventType.PHASE_TIMEOUT,
            {
                "phase": node.phase,
                "phase_since": node.phase_since,
                "limit_ms": limit,
                "elapsed_ms": elapsed_ms,
                "message_id": message_id,
            },
        )
        self._reported.add(stint)
        return TimeoutReport(stint, limit, elapsed_ms, message_id)

    async def check_all(self, nodes: Iterable[Node]) -> list[TimeoutReport]:
        reports: list[TimeoutReport] = []
        for node in nodes:
            try:
                report = await self.check(node)
            except Exception:  # one bad row must not silence the other teams' clocks
                log.exception("phase clock for %s failed", node.path)
                continue
            if report is not None:
                reports.append(report)
        return reports

    async def run(
        self, nodes: Callable[[], Iterable[Node]], interval: float = CHECK_SECONDS
    ) -> None:
        """Check every node every `interval` seconds until cancelled."""
        while True:
            await self.check_all(list(nodes()))
            await asyncio.sleep(interval)


async def revive_stint(store: ReviveStore, node: Node, now: float) -> Node:
    """A team woken after it ended starts a new stint in the same phase (upstream #357):
    `phase_since` moves to `now` and one `phase_change` from == to with reason `revived`
    records it. The caller must give the clock back (`restore_stint`) if the revival's
    spawn then fails — a moved clock for a launch that never happened would de-dupe the
    next real stint away (upstream PR #363)."""
    if node.phase is None:
        return node
    updated = await store.update_node(node.id, phase_since=now)
    await store.append_event(
        node.id,
        EventType.PHASE_CHANGE,
        {
            "from": node.phase,
            "to": node.phase,
            "reason": "revived",
            "phase_since": now,
            "previous_since": node.phase_since,
        },
    )
    return updated


async def restore_stint(store: ReviveStore, node: Node) -> None:
    """Undo `revive_stint`'s clock move after a failed revival (`node` is the row before)."""
    await store.update_node(node.id, phase_since=node.phase_since)
