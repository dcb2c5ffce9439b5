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
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["VERSION_BOUND", "PiVersion", "StartProbe", "dry_start", "parse_version", "pi_version"]

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
        out, err = await asyncio.wait_for(proc.communicate(), VERSION_BOUND)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None  # not cached: a loaded machine may answer next time
    found = parse_version(out.decode(errors="replace") + "\n" + err.decode(errors="replace"))
    _cache[key] = found
    return found


@dataclass(frozen=True, slots=True)
class StartProbe:
    """What a dry start of pi showed."""

    error: str | None  # why it did not answer (its own words); None: it answered
    model: str | None  # `provider/model` pi would use; None: it has none
    warnings: tuple[str, ...]  # its stderr `Warning:` lines (e.g. a model id it guessed)


async def dry_start(
    argv: list[str], env: Mapping[str, str], cwd: str, *, bound: float = VERSION_BOUND
) -> StartProbe:
    """Start `argv` (a pi command) in RPC mode with no session and ask it `get_state`.

    This is the launch's own first step, so an unknown provider, a missing key file or a
    broken install shows here, in pi's words (its stderr), instead of at the first spawn.
    """
    full = [*argv]
    if "--mode" not in full:
        full += ["--mode", "rpc"]
    if "--no-session" not in full:
        full.append("--no-session")
    proc = await asyncio.create_subprocess_exec(
        *full,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(b'{"id":1,"type":"get_state"}\n')
    errors = asyncio.ensure_future(proc.stderr.read())
    state: dict[str, object] | None = None
    why: str | None = None
    try:
        state = await asyncio.wait_for(_get_state(proc.stdout), bound)
        if state is None:
            why = "exited before it answered"
    except TimeoutError:
        why = f"no answer to get_state within {bound:g} s"
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    said = [ln.strip() for ln in (await errors).decode(errors="replace").splitlines()]
    said = [ln for ln in said if ln]
    warnings = tuple(ln for ln in said if ln.lower().startswith("warning"))
    if why is not None:
        code = f" (exit status {proc.returncode})" if proc.returncode else ""
        words = " ⏎ ".join(said)[-600:]
        return StartProbe(f"{why}{code}" + (f": {words}" if words else ""), None, warnings)
    model = state.get("model") if state is not None else None
    name = None
    if isinstance(model, dict):
        name = f"{model.get('provider')}/{model.get('id')}"
    return StartProbe(None, name, warnings)


async def _get_state(stdout: asyncio.StreamReader) -> dict[str, object] | None:
    """The get_state reply's data; None when the output ends first or it failed."""
    while line := await stdout.readline():
        with contextlib.suppress(ValueError):
            reply = json.loads(line)
            if isinstance(reply, dict) and reply.get("command") == "get_state":
                data = reply.get("data")
                ok = reply.get("success") and isinstance(data, dict)
                return data if ok and isinstance(data, dict) else None
    return None
