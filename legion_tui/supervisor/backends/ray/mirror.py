"""The host's mirror of an agent on a Ray node (issue 15): the node's session file and
terminal log, appended here in order as the actor's `pull` hands their new bytes over,
and the agent's state as last pulled — with what its handle on the node heard besides
the files (`Live`), told to the hooks a local handle would have called.

The bytes land in `<run>/sessions/<id>.jsonl` and `<run>/terminal/<id>.log` — the files
a local agent writes; for pi, in `<run>/sessions/<id>/<the name pi gave it>` with the
run's `<id>.jsonl` a link to it, as a local pi's — so the watcher, the model and the
widgets read a remote agent as they read a local one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from legion_tui.session.streaming import StreamSink
from legion_tui.supervisor.backend import LaunchSpec
from legion_tui.supervisor.backends.asking import InputSink
from legion_tui.supervisor.backends.common import log_path, point_session_link
from legion_tui.supervisor.backends.ray.actor import Chunk, Live, Placement, State

__all__ = ["PULL_WAIT", "LiveHooks", "Mirror"]

# A long poll's most. It ends at the agent's first new byte or state, and a node's
# death fails it at once, so a long one costs nothing but the host's calls for a quiet
# agent: one per PULL_WAIT (at 1 s, 0.26 % of a core per idle agent here; 0.06 % at 10 s).
PULL_WAIT = 10.0


def _append(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


@dataclass(frozen=True)
class LiveHooks:
    """`registry.make_handle`'s hooks, for what a remote handle hears (`Live`)."""

    on_stream: StreamSink | None = None
    on_line: Callable[[str], None] | None = None
    on_input: InputSink | None = None

    def tell(self, before: Live, now: Live) -> None:
        if now.streaming != before.streaming and self.on_stream is not None:
            self.on_stream(now.streaming)
        if now.line != before.line and self.on_line is not None:
            self.on_line(now.line)
        if now.question != before.question and self.on_input is not None:
            self.on_input(now.question)


class Mirror:
    """One agent's files as far as the host holds them, kept by pulls from its actor."""

    def __init__(self, spec: LaunchSpec, hooks: LiveHooks) -> None:
        self.spec = spec
        self._hooks = hooks
        self.session_file = spec.session_file  # where the node's session bytes land
        self.state = State(running=False, exited=None, session_size=0, log_size=0)
        self.actor: Any = None  # set once the actor has started
        self._session_at = 0  # bytes of the node's session file the mirror holds
        self._log_at = 0  # of its terminal log (the host's log may hold earlier launches)

    def place(self, placement: Placement) -> None:
        """Where the node's session bytes land here, and how many it holds already."""
        self._session_at = placement.continued
        if placement.backend == "pi-rpc":
            # As a local pi's: pi's own file in `sessions/<id>/`, the run's file a link.
            name = Path(placement.session_file).name
            self.session_file = self.spec.run_dir / "sessions" / self.spec.node_id / name
            point_session_link(self.spec.session_file, self.session_file)

    async def follow(self) -> None:
        """Long polls until the agent has exited, then the rest of its bytes."""
        while self.state.exited is None:
            await self.pull(PULL_WAIT)
        await self.catch_up(self.state)

    async def pull(self, wait: float) -> None:
        chunk: Chunk = await self.actor.pull.remote(
            self._session_at, self._log_at, wait, self.state
        )
        self._take(chunk)

    async def final_bytes(self) -> None:
        """Everything the agent wrote up to its end (it is stopped): into the mirror."""
        chunk: Chunk = await self.actor.pull.remote(self._session_at, self._log_at, 0.0, None)
        self._take(chunk)
        await self.catch_up(chunk.state)

    async def catch_up(self, state: State) -> None:
        """Pull until the mirror holds what the node's files held at `state`."""
        while self._session_at < state.session_size or self._log_at < state.log_size:
            await self.pull(0.0)

    def update(self, state: State) -> None:
        """The agent's state as an actor call returned it; an exit once heard stays."""
        exited = state.exited if state.exited is not None else self.state.exited
        before, self.state = self.state, dataclasses.replace(state, exited=exited)
        self._hooks.tell(before.live, state.live)

    def _take(self, chunk: Chunk) -> None:
        """Append what the mirror lacks. Two pulls may cross (the stream's long poll and
        a catch-up): each carries its own offset, so a byte is appended once, in order."""
        fresh = chunk.session[self._session_at - chunk.session_at :]
        if fresh:
            _append(self.session_file, fresh)
            self._session_at += len(fresh)
        fresh = chunk.log[self._log_at - chunk.log_at :]
        if fresh:
            _append(log_path(self.spec), fresh)
            self._log_at += len(fresh)
        self.update(chunk.state)
