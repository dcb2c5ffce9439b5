"""Retires the ledger refused (a full disk): the agent is stopped all the same, so the model
shows the retire at once (`running` would be a lie), and the writes are owed — retried
every RETRY_OWED_EVERY s while the host runs, and once more as it closes, before the
pause decides which live nodes were interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from legion_tui.ledger.errors import LedgerError
from legion_tui.model import EventType, NodeStatus
from legion_tui.timeouts import within

if TYPE_CHECKING:
    from legion_tui.state import Clock, LegionModel
    from legion_tui.supervisor.state.naming import Names
    from legion_tui.supervisor.state.record import Record

__all__ = ["RETRY_OWED_EVERY", "Owed", "OwedRetires"]

log = logging.getLogger(__name__)

# How often a retire the ledger refused is tried again while the host runs.
RETRY_OWED_EVERY = 1.0
# How long the close waits for a retry round under way to finish its writes.
ROUND_BOUND = 10.0


@dataclass(slots=True)
class Owed:
    """The writes of one retire; once refused, the model already shows them."""

    data: dict[str, Any]
    fields: dict[str, Any]
    phase_event: dict[str, Any] | None  # the team's `phase_change` to aborted, if unwritten
    error: str | None = None  # the ledger's refusal, once one happened
    # The status written: retired, or the ending an ended member keeps (then no
    # `node_retired`: its `node_settled`/`node_failed` stays its last word — the results
    # a parent collects read it).
    status: NodeStatus = NodeStatus.RETIRED
    interrupted: bool = False  # retired for a reason `r` resumes from (INTERRUPT_REASONS)


class OwedRetires:
    def __init__(self, model: LegionModel, names: Names, record: Record, *, clock: Clock) -> None:
        self._model = model
        self._names = names
        self._record = record
        self._clock = clock
        self._owed: dict[str, Owed] = {}
        self._retry: asyncio.Task[None] | None = None
        # Set as the host closes: no round starts, a round's pause ends (not its write).
        self._closing = asyncio.Event()

    def node_ids(self) -> list[str]:
        """The ids of the nodes whose retire the ledger has not got yet."""
        return list(self._owed)

    async def write(self, node_id: str, owed: Owed) -> str | None:
        """Write the retire; None once it is in the ledger, else the ledger's refusal —
        then the model shows it anyway and the write is owed."""
        compensated = owed.error is not None
        try:
            if owed.phase_event is not None:
                await self._record.event(node_id, EventType.PHASE_CHANGE, owed.phase_event)
                owed.phase_event = None
            kept = owed.status is not NodeStatus.RETIRED
            if compensated and self._names.node(node_id).status is not owed.status:
                # Resumed since: its row is newer than this retire; only the history is owed.
                if not kept:
                    await self._record.event(node_id, EventType.NODE_RETIRED, owed.data)
            else:
                await self._record.set_status(
                    node_id,
                    owed.status,
                    None if kept else EventType.NODE_RETIRED,
                    owed.data,
                    # The model already says so (or the status is kept): the write only
                    # catches the ledger up.
                    refresh=compensated or kept,
                    interrupted=None if kept else owed.interrupted,
                    **owed.fields,
                )
        except (LedgerError, OSError) as err:
            if not compensated:
                log.error(
                    "%s is stopped, but the ledger refused its retire (%s); retrying",
                    self._names.node(node_id).path,
                    err,
                )
                node = self._names.node(node_id)
                self._model.upsert(
                    dataclasses.replace(
                        node, status=owed.status, updated_at=self._clock(), **owed.fields
                    )
                )
                if not kept:
                    self._model.mark_interrupted(node_id, owed.interrupted)
                self._record.notify()
            owed.error = str(err)
            self._owed[node_id] = owed
            if not self._closing.is_set() and (self._retry is None or self._retry.done()):
                self._retry = asyncio.create_task(self._retry_owed(), name="owed-retires")
            return owed.error
        self._owed.pop(node_id, None)
        if compensated:
            log.warning("%s: its retire is in the ledger now", self._names.node(node_id).path)
        return None

    async def flush(self) -> None:
        """Try every owed retire once more."""
        for node_id, owed in list(self._owed.items()):
            await self.write(node_id, owed)

    def stop_retrying(self) -> None:
        """The host is closing: no retry round starts from now on (`close` does the last)."""
        self._closing.set()

    async def close(self) -> None:
        """The last try, and a word in the log for each retire the ledger never got.

        A round under way finishes its writes first: cancelled between a retire's status
        and its event, the entry stayed owed and the last try wrote `node_retired` twice
        (`make soak`, tests/test_stop_races.py)."""
        self.stop_retrying()
        if self._retry is not None:
            # Bounded all the same: a ledger that never answers must not hold the exit.
            with contextlib.suppress(TimeoutError, Exception):
                await within(asyncio.shield(self._retry), ROUND_BOUND)
            self._retry.cancel()
            await asyncio.gather(self._retry, return_exceptions=True)
            self._retry = None
        await self.flush()
        for node_id, owed in self._owed.items():
            log.error(
                "%s was stopped, but the ledger never recorded it (%s): the next open of "
                "this session will list it as interrupted",
                self._names.node(node_id).path,
                owed.error,
            )

    async def _retry_owed(self) -> None:
        while self._owed and not self._closing.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RETRY_OWED_EVERY):
                    await self._closing.wait()
            if self._closing.is_set():
                return
            await self.flush()
