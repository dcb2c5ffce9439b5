"""What the dashboard may ask of a supervisor. The supervisor implements it; tests may
hand the app any object with these methods. Every call returns the receipt text that the
user sees (legion_tui.receipts) or raises OpError with a message worth showing."""

from __future__ import annotations

from typing import Protocol


class OpError(Exception):
    """An operation was refused or failed; `code` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Operations(Protocol):
    async def stop(self, node_id: str, *, force: bool = False) -> str: ...

    async def abort(self, node_id: str, *, keep_queue: bool = False) -> str: ...

    async def steer(self, node_id: str, text: str) -> str: ...

    async def resume(self, node_id: str) -> str: ...
