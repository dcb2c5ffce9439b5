"""The attach flow of the dashboard (issue 12 item 2): `A` on a node → its plan
(legion_tui.agents.attach) → for a node whose legion agent still runs, `Stop NAME's agent and
open its session in pi? y confirms` and the stop → the dashboard suspends, the agent's
own UI runs on the session in the node's cwd, and on its exit the dashboard comes back
with a toast of what the session gained (`+N entries`).

The event loop keeps running while the UI has the terminal (the supervisor shares it:
the other agents are still supervised); nothing is drawn meanwhile — the frames wait in
a batch — so no byte of the dashboard lands in the agent's UI.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any, Protocol

from textual.app import SuspendNotSupported

from legion_tui.agents.attach import AttachPlan, AttachRefused, session_entries
from legion_tui.ops import HostOperations, Operations
from legion_tui.widgets.confirm import ConfirmKind, ConfirmRequest
from legion_tui.wire.names import OpError

ATTACH_KINDS: tuple[ConfirmKind, ...] = ("attach",)

Say = Callable[[str, bool], None]  # (text, is_error)


class Terminal(Protocol):
    """The dashboard's hold on the terminal (the app): what handing it over takes."""

    def batch_update(self) -> AbstractContextManager[None]: ...

    def suspend(self) -> AbstractContextManager[None]: ...

    def refresh(self, *, layout: bool = False) -> object: ...


def stop_first_prompt(plan: AttachPlan) -> str:
    return (
        f"Stop {plan.name}'s agent and open its session in {plan.program}? "
        "y confirms · any other key cancels"
    )


def back_line(plan: AttachPlan, gained: int, code: int) -> str:
    said = f"Back from {plan.program}: {plan.name}'s session gained +{gained} entries"
    return said + ("" if code == 0 else f" ({plan.program} exited {code})")


class Attacher:
    def __init__(
        self,
        app: Terminal,
        ops: Operations,
        *,
        say: Say,
        ask: Callable[[ConfirmRequest], None],
        run: Callable[[Coroutine[Any, Any, None]], object],
    ) -> None:
        self._app = app
        self._ops = ops
        self._say = say
        self._ask = ask
        self._run = run
        self.attached: AttachPlan | None = None  # whose UI has the terminal now

    def _plan(self, node_id: str) -> AttachPlan | None:
        ops = self._ops
        if not isinstance(ops, HostOperations):
            self._say("Attach opens an agent's UI only in the dashboard that hosts it.", True)
            return None
        try:
            return ops.attach_plan(node_id)
        except (AttachRefused, OpError) as err:
            self._say(str(err) if isinstance(err, AttachRefused) else err.message, True)
            return None

    def start(self, node_id: str) -> None:
        """`A`: refuse what cannot be attached, ask before stopping a running agent."""
        if self.attached is not None:
            return
        plan = self._plan(node_id)
        if plan is None:
            return
        if plan.agent_live:
            self._ask(ConfirmRequest("attach", node_id, stop_first_prompt(plan)))
            return
        self._run(self._attach(plan))

    def answered(self, request: ConfirmRequest, confirmed: bool) -> None:
        if not confirmed:
            self._say("Cancelled — nothing stopped, nothing opened.", False)
            return
        assert request.node_id is not None
        self._run(self._stop_then_attach(request.node_id))

    async def _stop_then_attach(self, node_id: str) -> None:
        try:
            self._say(await self._ops.act("stop", node_id), False)
        except OpError as err:
            self._say(err.message, True)
            return
        plan = self._plan(node_id)
        if plan is None:
            return
        if plan.agent_live:  # it would not stop: never two writers on one session
            self._say(f"{plan.name}'s agent is still running — not attached.", True)
            return
        await self._attach(plan)

    async def _attach(self, plan: AttachPlan) -> None:
        app = self._app
        before = session_entries(plan.session_file)
        self.attached = plan
        try:
            with app.batch_update(), app.suspend():
                env = {**os.environ, **plan.env}
                child = await asyncio.create_subprocess_exec(*plan.argv, cwd=plan.cwd, env=env)
                code = await child.wait()
        except SuspendNotSupported:
            self._say("This terminal cannot be handed to another program (a web view).", True)
            return
        except OSError as err:
            self._say(f"cannot start {plan.program}: {err}", True)
            return
        finally:
            self.attached = None
        app.refresh(layout=True)
        self._say(back_line(plan, session_entries(plan.session_file) - before, code), code != 0)
