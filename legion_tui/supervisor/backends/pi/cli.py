"""What one `pi` binary is: its version, and the RPC features that version has.

Two pi lines are current (notes/pi-format.md): 0.73 (`@mariozechner/pi-coding-agent`)
and 1.6 (`@earendil-works/pi-coding-agent`). 0.73 has no `clear_queue`, no
`agent_settled`, no `willRetry` on `agent_end` and no `disposition` on a prompt's reply;
asking it for what it lacks costs an answer without an id. So the backend asks the binary
once (`pi --version`; 0.73 prints it on stderr, 1.6 on stdout) and uses what it has.
`pi --version` is a whole Node start (0.4–1.5 s here): the answer is cached per binary
file (path, size, mtime), so a host asks each binary once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from legion_tui.timeouts import within

__all__ = ["VERSION_BOUND", "PiVersion", "parse_version", "pi_version"]

VERSION_BOUND = 30.0  # a Node start on a loaded 2-core machine, with room to spare
_VERSION = re.compile(r"\b(\d+)\.(\d+)\.(\d+)\b")

# The release each RPC feature arrived in (pi's CHANGELOG).
_CLEAR_QUEUE = (0, 84, 4)
_AGENT_SETTLED = (0, 80, 4)


@dataclass(frozen=True, slots=True)
class PiVersion:
    text: str  # "0.73.1"
    parts: tuple[int, int, int]

    @property
    def clear_queue(self) -> bool:
        """`clear_queue` exists: an abort can drop queued steering first."""
        return self.parts >= _CLEAR_QUEUE

    @property
    def agent_settled(self) -> bool:
        """pi says when it is idle (`agent_settled`); older ones need a get_state."""
        return self.parts >= _AGENT_SETTLED


def parse_version(output: str) -> PiVersion | None:
    match = _VERSION.search(output)
    if match is None:
        return None
    major, minor, patch = (int(g) for g in match.groups())
    return PiVersion(match.group(0), (major, minor, patch))


_cache: dict[tuple[str, int, int], PiVersion | None] = {}


def _binary_key(program: str) -> tuple[str, int, int] | None:
    """Which file `program` is, as of now (a reinstalled pi is asked again)."""
    try:
        st = os.stat(program)
    except OSError:
        return None
    return os.path.realpath(program), st.st_size, st.st_mtime_ns


async def pi_version(program: str, env: Mapping[str, str]) -> PiVersion | None:
    """The version of the pi at `program` (a resolved path); None when it cannot say.

    Bounded; never raises for a binary that hangs, crashes or prints something else.
    """
    key = _binary_key(program)
    if key is None:
        return None
    if key in _cache:
        return _cache[key]
    proc = await asyncio.create_subprocess_exec(
        program,
        "--version",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
    )
    try:
        out, err = await within(proc.communicate(), VERSION_BOUND)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None  # not cached: a loaded machine may answer next time
    found = parse_version(out.decode(errors="replace") + "\n" + err.decode(errors="replace"))
    _cache[key] = found
    return found
