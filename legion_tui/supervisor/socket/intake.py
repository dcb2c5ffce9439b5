"""What one socket connection may send, and what all of them together may hold (SPEC §5).

The supervisor's socket is open to every process of the user's, so its limits are set
here, not left to the OS: how many connections from outside the host it serves
(`connection_cap`, from RLIMIT_NOFILE), how long one may sit idle, and how large one
request is — bytes, nesting and values, all measured before the request is parsed.

Memory: each connection may hold `free_bytes` of request for nothing, so small requests
are never refused for others' big ones; everything beyond that — the unfinished part of a
long line as it arrives, then a whole request while its op runs (a `wait` keeps its
request for as long as it waits) — is charged to one `ByteBudget` shared by every
connection. A line that cannot be charged is not read: the server answers `BUSY` and the
client may send it again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from legion_tui.wire.lines import MAX_LINE_BYTES, LineFramer
from legion_tui.wire.names import OpError

__all__ = [
    "DEFAULT_LIMITS",
    "ByteBudget",
    "Line",
    "RequestFramer",
    "SocketLimits",
    "connection_cap",
    "parse_request",
]

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SocketLimits:
    # Connections from outside the host process; None: `connection_cap` of the soft
    # RLIMIT_NOFILE at start (the host's own in-process agents are not counted).
    max_connections: int | None = None
    idle_seconds: float = 30.0  # without a request (a request being answered is not idle)
    # At the cap, a connection idle this long is closed to make room for a new one: idle
    # clients cannot keep a fresh verb out for the whole idle timeout.
    evictable_after: float = 1.0
    send_seconds: float = 30.0  # a reply the client does not read within this: closed
    backlog: int = 1024  # the kernel's queue of connections not yet accepted
    max_request: int = MAX_LINE_BYTES  # bytes in one request line (16 MiB)
    max_depth: int = 64  # nesting of arrays and objects (a real request nests < 10)
    max_values: int = 100_000  # strings, containers and commas in one request
    total_bytes: int = 32 * MiB  # the shared budget of request bytes held (ByteBudget)
    free_bytes: int = 64 * 1024  # per connection, held without charge
    value_cost: int = 64  # what one parsed value costs the budget, beyond its bytes


DEFAULT_LIMITS = SocketLimits()


def connection_cap(nofile_soft: int) -> int:
    """Connections served at once for a host allowed `nofile_soft` fds: an eighth of them
    (the rest stay for the ledger, session files, agents' pipes, pidfds and ptys), at
    least 8, at most 256."""
    return max(8, min(256, nofile_soft // 8))


class ByteBudget:
    """Bytes of requests that every connection together may hold beyond their free part."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.held = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.total:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


@dataclass(frozen=True, slots=True)
class Line:
    """One complete request line (newline stripped) and what it holds of the budget."""

    data: bytes
    charged: int


class RequestFramer(LineFramer[Line | OpError]):
    """Request lines out of one connection's bytes, in order, each at most `max_request`
    bytes; what an unfinished line holds beyond `free_bytes` is charged to the budget.

    `feed` returns, in the order the lines were sent, each complete `Line` and an OpError
    for each line that was not read: TOO_LONG (over `max_request`) or BUSY (the budget
    could not take it). Such a line is skipped to its newline as it streams, never kept
    (the framing is `lines`', which frames agents' stdout the same way).
    """

    def __init__(self, limits: SocketLimits, budget: ByteBudget) -> None:
        super().__init__()
        self._limits = limits
        self._budget = budget
        self._charged = 0

    def finish(self) -> Line | None:
        """At EOF: the last line if it lacks only its newline."""
        if self._dropping or not self._pieces:
            return None
        line = self._finished(b"".join(self._pieces))
        self._discard()
        return line

    def release(self) -> None:
        """The connection is gone: what its unfinished line held goes back."""
        self._budget.give(self._charged)
        self._charged = 0
        self._discard()

    def _finished(self, line: bytes) -> Line:
        taken = Line(line, self._charged)
        self._charged = 0  # the line holds its charge now, not the framer
        return taken

    def _discard(self) -> None:
        super()._discard()
        if self._charged:  # a refused line's charge: nothing holds it any more
            self._budget.give(self._charged)
            self._charged = 0

    def _admit(self, size: int, out: list[Line | OpError]) -> bool:
        limits = self._limits
        if size > limits.max_request:
            out.append(
                OpError(
                    "TOO_LONG",
                    f"request line too long: over {limits.max_request} bytes; it was not read",
                )
            )
            return False
        need = max(0, size - limits.free_bytes) - self._charged
        if need > 0 and not self._budget.take(need):
            out.append(busy_error(limits))
            return False
        self._charged += need
        return True


def busy_error(limits: SocketLimits) -> OpError:
    return OpError(
        "BUSY",
        f"the supervisor holds its limit of {limits.total_bytes // MiB} MiB of unfinished "
        "requests; this one was not read — send it again",
    )


# What a scan of a request stops at: a string's opening quote, a bracket, a comma.
_SIGNIFICANT = re.compile(r'["\[\]{},]')


def count_values(text: str, limits: SocketLimits) -> int:
    """An upper bound of the values `json.loads(text)` would build (strings — keys too —,
    arrays, objects, and one per comma); OpError TOO_DEEP or TOO_MANY_VALUES as soon as
    the nesting or the count passes its limit, before anything is built.

    Linear in the text: each string is passed over by json's own C scanner, and the loop
    turns at most a few times per counted value (closing brackets follow opening ones)."""
    depth = values = 0
    pos = 0
    search = _SIGNIFICANT.search
    while (found := search(text, pos)) is not None:
        char = found.group()
        pos = found.end()
        if char == '"':
            try:
                pos = scanstring(text, pos)[1]
            except ValueError:
                return values  # an unterminated or bad string: json.loads says where
            values += 1
        elif char in "[{":
            depth += 1
            values += 1
            if depth > limits.max_depth:
                raise OpError(
                    "TOO_DEEP",
                    f"request nested too deeply: over {limits.max_depth} levels; "
                    "it was not read",
                )
        elif char in "]}":
            depth -= 1
            if depth < 0:
                return values  # more closed than opened: not JSON, json.loads says so
        else:
            values += 1
        if values > limits.max_values:
            raise OpError(
                "TOO_MANY_VALUES",
                f"request has too many values: over {limits.max_values}; it was not read",
            )
    return values


def parse_request(line: Line, limits: SocketLimits, budget: ByteBudget) -> tuple[Any, int]:
    """(the parsed JSON, the bytes it now holds of the budget) for one complete line.

    Raises OpError: BAD_JSON (not UTF-8, not JSON), TOO_DEEP, TOO_MANY_VALUES, or BUSY
    when the budget cannot take the parsed request; the line's charge is given back then.
    """
    try:
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise OpError("BAD_JSON", f"malformed JSON: not UTF-8 ({err.reason})") from err
        values = count_values(text, limits)
    except OpError:
        budget.give(line.charged)
        raise
    cost = max(0, len(line.data) + values * limits.value_cost - limits.free_bytes)
    if cost > line.charged and not budget.take(cost - line.charged):
        budget.give(line.charged)
        raise busy_error(limits)
    budget.give(max(0, line.charged - cost))
    try:
        return json.loads(text), cost
    except (ValueError, RecursionError) as err:  # bounded above; RecursionError: never
        budget.give(cost)
        raise OpError("BAD_JSON", f"malformed JSON: {err}") from err
