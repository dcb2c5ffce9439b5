"""The roster: who is running now. One slot per node — its agent handle, the task that
monitors it, the event a turn started outside the monitor sets — plus the marks a stop,
a resume and a verification put on a node while they are under way.

Nothing here awaits: every check-and-set is atomic in the loop, which is what lets a
stop's mark (set before its first await) keep a racing launch or resume down.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from legion_tui.supervisor.backend import AgentHandle

__all__ = ["Roster", "Slot"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Slot:
    handle: AgentHandle | None = None
    monitor: asyncio.Task[None] | None = None
    # Set when a turn starts outside the monitor (steer, mail); kept once made, like the
    # node it belongs to (a monitor still winding down may read it).
    turn: asyncio.Event | None = None


class Roster:
    def __init__(self) -> None:
        self._slots: dict[str, Slot] = {}
        self.stopping: set[str] = set()  # live nodes a stop is retiring: no spawn, no settle
        # Nodes a resume is relaunching: checked and set before its first await, so a
        # second resume (`r` pressed twice) cannot start a second agent on the same file.
        self.resuming: set[str] = set()
        self.verifying: set[str] = set()  # teams whose `legion-verify` commands run now
        # Nodes whose session their own UI holds now (an attach): no resume, no steer,
        # no wake by a letter until it is taken back — never two writers on one session.
        self.in_own_ui: set[str] = set()

    def _slot(self, node_id: str) -> Slot:
        slot = self._slots.get(node_id)
        if slot is None:
            slot = self._slots[node_id] = Slot()
        return slot

    # ----- handles ------------------------------------------------------------------------
    def attach(self, node_id: str, handle: AgentHandle) -> None:
        """A launch's new agent, with a fresh turn event."""
        slot = self._slot(node_id)
        slot.handle, slot.turn = handle, asyncio.Event()

    def handle(self, node_id: str) -> AgentHandle | None:
        slot = self._slots.get(node_id)
        return None if slot is None else slot.handle

    def detach(self, node_id: str, only: AgentHandle | None = None) -> AgentHandle | None:
        """Take the node's handle out (only if it is `only`, when given)."""
        slot = self._slots.get(node_id)
        if slot is None or slot.handle is None or (only is not None and slot.handle is not only):
            return None
        handle, slot.handle = slot.handle, None
        return handle

    def detach_all(self) -> list[tuple[str, AgentHandle]]:
        out: list[tuple[str, AgentHandle]] = []
        for node_id, slot in self._slots.items():
            if slot.handle is not None:
                out.append((node_id, slot.handle))
                slot.handle = None
        return out

    def handles(self) -> dict[str, AgentHandle]:
        """Every attached handle (a snapshot)."""
        return {i: s.handle for i, s in self._slots.items() if s.handle is not None}

    # ----- monitors -----------------------------------------------------------------------
    def watch(self, node_id: str, monitor: asyncio.Task[None]) -> None:
        self._slot(node_id).monitor = monitor

    def unwatch(self, node_id: str) -> asyncio.Task[None] | None:
        slot = self._slots.get(node_id)
        if slot is None:
            return None
        monitor, slot.monitor = slot.monitor, None
        return monitor

    def unwatch_all(self) -> list[asyncio.Task[None]]:
        out: list[asyncio.Task[None]] = []
        for slot in self._slots.values():
            if slot.monitor is not None:
                out.append(slot.monitor)
                slot.monitor = None
        return out

    def monitored(self) -> list[str]:
        """The ids of the nodes a monitor watches now."""
        return [i for i, s in self._slots.items() if s.monitor is not None]

    # ----- turns --------------------------------------------------------------------------
    def turn_event(self, node_id: str) -> asyncio.Event | None:
        slot = self._slots.get(node_id)
        return None if slot is None else slot.turn

    def turn_running(self, node_id: str) -> bool:
        """Its agent is in a turn now."""
        handle = self.handle(node_id)
        return handle is not None and handle.turn_running()

    def between_turns(self, node_id: str) -> bool:
        """Its agent is attached and in no turn now (idle, or exited)."""
        handle = self.handle(node_id)
        return handle is not None and not handle.turn_running()
