"""The project's own checks on an agent's work, and the loop back to it (issue 34 items
2 and 3).

`[checks] command` (settings) runs in an agent's own worktree each time the agent
settles — the same runner as a team's `legion-verify` commands (`verify.py`: /bin/sh,
its own process group under a marker, killed whole at `[checks] timeout`), its output
in `<run>/checks/<node>-<n>.log`. Each run is a `checks` event on the node: `running`,
then `pass` or `fail` with the failing command's exit; the row, the detail and `legion
status` say it from there (`receipts.checks_words`).

A failure goes back to the agent that owns the change: the command and the end of its
output as a follow-up on its session (a steer: a released agent is started again
first), up to `[checks] retries` rounds; the agent's next settle runs the checks again.
After the last round the row says `✗ checks after N retries` and the user is told. A
pass, or the rounds running out, starts the count again.

Only an agent working in a worktree of its own is checked (a team's members share their
lead's: the lead's settle checks the team's work), and never a simulated one (its work
is pretend).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.inert import inert
from legion_tui.model import EventType

if TYPE_CHECKING:
    from legion_tui.settings import ChecksSettings
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.teams.teams import Teams

__all__ = ["CHECKS_DIR", "Checks", "output_tail"]

log = logging.getLogger(__name__)

CHECKS_DIR = "checks"  # under the run folder
TAIL_LINES = 40  # of a failing run's output, sent back to the agent
TAIL_CHARS = 4000

FollowUp = Callable[[str, str], Awaitable[object]]  # (node id, text): a steer as root


def output_tail(path: Path) -> str:
    """The end of a run's output: what a failing test prints last is what it says."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    tail = "\n".join(text.rstrip("\n").splitlines()[-TAIL_LINES:])
    return inert(tail[-TAIL_CHARS:])


class Checks:
    def __init__(self, ctx: HostContext, teams: Teams, follow_up: FollowUp) -> None:
        self._ctx = ctx  # the run folder, the record, the user's announcements
        self._teams = teams  # whose worktree a node works in
        self._follow_up = follow_up
        self._rounds: dict[str, int] = {}  # node id → failures sent back since its last pass
        self._running: dict[str, asyncio.Task[None]] = {}
        self._runs = itertools.count(1)  # numbers the output files

    def settled(self, node_id: str) -> None:
        """The node settled: check its work, when the project has checks and the node a
        worktree of its own. A run still going for an older settle is cancelled."""
        from legion_tui.settings import load_settings

        ctx = self._ctx
        node = ctx.names.node(node_id)
        if ctx.closed or node.simulated or self._teams.holder_of(node_id) != node_id:
            return
        settings = load_settings(ctx.project_dir).settings.checks  # as the file says now
        tree = self._teams.worktree_of(node_id)
        if settings.command is None or tree is None:
            return
        previous = self._running.pop(node_id, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.get_running_loop().create_task(
            self._run(node_id, tree.path, settings), name=f"checks-{node.path}"
        )
        self._running[node_id] = task
        task.add_done_callback(lambda done: self._ended(node_id, done))

    def _ended(self, node_id: str, task: asyncio.Task[None]) -> None:
        if self._running.get(node_id) is task:
            del self._running[node_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("the checks of %s failed to run", node_id, exc_info=task.exception())

    async def close(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, node_id: str, cwd: Path, settings: ChecksSettings) -> None:
        from legion_tui.supervisor.teams.verify import run_verification

        ctx = self._ctx
        command = settings.command or ""
        done_rounds = self._rounds.get(node_id, 0)
        base: dict[str, Any] = {"command": command, "round": done_rounds,
                                "retries": settings.retries}  # fmt: skip
        await ctx.record.event(node_id, EventType.CHECKS, base | {"state": "running"})
        output = ctx.run.dir / CHECKS_DIR / f"{node_id}-{next(self._runs)}.log"
        result = await run_verification(
            [command], cwd=cwd, output_file=output, run_id=ctx.run.run_id, node_id=node_id,
            command_timeout=settings.timeout_seconds,
        )  # fmt: skip
        failed = [c for c in result.commands if not c.ok]
        if not failed:
            self._rounds.pop(node_id, None)
            await ctx.record.event(node_id, EventType.CHECKS, base | {
                "state": "pass", "output_file": str(output)})  # fmt: skip
            return
        summary = failed[0].describe()
        exhausted = done_rounds >= settings.retries
        await ctx.record.event(node_id, EventType.CHECKS, base | {
            "state": "fail", "summary": summary, "output_file": str(output),
            "exhausted": exhausted,
        })  # fmt: skip
        name = ctx.names.node(node_id).name
        if exhausted:
            self._rounds.pop(node_id, None)  # the user's follow-up starts a new count
            ctx.announce(receipts.checks_gave_up(name, summary, settings.retries, output))
            return
        self._rounds[node_id] = done_rounds + 1
        prompt = receipts.checks_failed_prompt(
            summary, output_tail(output), done_rounds + 1, settings.retries
        )
        try:
            await self._follow_up(node_id, prompt)
        except Exception as err:  # stopped meanwhile, or its agent would not start
            self._rounds.pop(node_id, None)
            # Said on the node too: its checks are final now (a fan-out's wait ends).
            await ctx.record.event(node_id, EventType.CHECKS, base | {
                "state": "fail", "summary": summary, "output_file": str(output),
                "exhausted": True, "unsent": str(getattr(err, "message", err)),
            })  # fmt: skip
            ctx.announce(f"{name}: the checks failed ({summary}) and could not be sent back "
                         f"to it: {getattr(err, 'message', err)}")  # fmt: skip
