"""The in-process backend: the simulated agent as an asyncio task (pid None)."""

from __future__ import annotations

import asyncio
import contextlib

from legion_tui.model import Backend
from legion_tui.sim.agent import SimAgent
from legion_tui.sim.clock import SimClock
from legion_tui.sim.config import SimConfig
from legion_tui.supervisor.backend import (
    ABORT_BOUND,
    STOP_GRACE,
    AbortResult,
    LaunchSpec,
    SteerOutcome,
    SweepReport,
)
from legion_tui.supervisor.backends.common import STEER_OUTCOMES, bounded_abort
from legion_tui.timeouts import within

__all__ = ["InProcessHandle", "sim_config"]


def sim_config(spec: LaunchSpec) -> SimConfig:
    return SimConfig(
        node_id=spec.node_id,
        name=spec.name,
        role=spec.role,
        session_file=spec.session_file,
        run_dir=spec.run_dir,
        cwd=spec.cwd,
        socket_path=spec.socket_path,
        seed=spec.seed,
        speed=spec.speed,
        behaviour=dict(spec.sim_behaviour),
        resume=spec.resume,
    )


class InProcessHandle:
    backend: Backend = "inprocess"

    def __init__(self, spec: LaunchSpec, *, clock: SimClock | None = None) -> None:
        self.spec = spec
        self.node_id = spec.node_id
        self.pid: int | None = None
        self.session_file = spec.session_file
        self.agent = SimAgent(sim_config(spec), clock=clock)
        self._stopped = False

    async def start(self) -> None:
        self.agent.prompt(self.spec.task)

    def turn_running(self) -> bool:
        return self.agent.streaming

    async def idle(self) -> None:
        await self.agent.wait_idle()

    @property
    def exited(self) -> int | None:
        if self.agent.exit_code is not None:
            return self.agent.exit_code
        return 0 if self._stopped else None

    async def abort(self, *, keep_queue: bool = False, bound: float = ABORT_BOUND) -> AbortResult:
        if not self.agent.streaming:
            return AbortResult("no-turn", 0)

        async def clear() -> int:
            dropped = self.agent.clear_queue()
            return len(dropped["steering"]) + len(dropped["followUp"])

        task: asyncio.Task[bool] | None = None

        def interrupt() -> None:
            nonlocal task
            task = asyncio.get_running_loop().create_task(self.agent.abort())

        async def settled() -> None:
            await self.agent.wait_idle()
            if task is not None:  # and its abort returned: a steer now starts a turn
                await asyncio.shield(task)

        result = await bounded_abort(
            bound=bound,
            keep_queue=keep_queue,
            clear=clear,
            interrupt=interrupt,
            settled=settled,
        )
        if task is not None and task.done():
            task.result()
        return result

    async def steer(self, text: str) -> SteerOutcome:
        return STEER_OUTCOMES[self.agent.steer(text)]

    def turn_error(self) -> str | None:
        # The sim writes its own failures into its session file; a crash it cannot write.
        return self.agent.crash

    async def deliver(self, envelope: str) -> None:
        self.agent.follow_up(envelope)

    async def stop(self, *, force: bool, grace: float = STOP_GRACE) -> SweepReport:
        # Nothing to signal: cancelling the task ends the turn at once, force or not.
        with contextlib.suppress(TimeoutError):
            await within(self.agent.close(), grace if grace > 0 else 1.0)
        self._stopped = True
        return SweepReport(signalled=[], survivors=[])
