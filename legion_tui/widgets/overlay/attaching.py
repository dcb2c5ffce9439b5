"""The attach flow of the dashboard (issues 12 and 31): `A` on a node → its plan
(legion_tui.agents.attach) → a hand-over: an agent in a turn is aborted first (`NAME is
in a turn: abort it and open its session in pi? y confirms`), its control process ends
cleanly and the node reads `attached` (not retired) → the dashboard suspends, the
agent's own UI runs on the session in the node's cwd → when it exits, legion takes the
node back (its control process again on the session, idle: settled and steerable) and
says what the session gained (`+N entries`). A UI that fails keeps its words on screen
until Enter; the node is taken back all the same, as it was.

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
from legion_tui.agents.installed import agent_environment
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


def abort_first_prompt(plan: AttachPlan) -> str:
    return (
        f"{plan.name} is in a turn: abort it and open its session in {plan.program}? "
        "y confirms · any other key cancels"
    )


def back_line(plan: AttachPlan, gained: int, code: int | None) -> str:
    said = f"Back from {plan.program}: {plan.name}'s session gained +{gained} entries"
    return said + ("" if not code else f" ({plan.program} exited {code})")


def _wait_for_enter(program: str, code: int) -> None:
    """The UI failed: its own words stay on screen until the user has read them (the
    terminal is in its line mode while the dashboard is suspended: a read ends at Enter)."""
    if not os.isatty(0):  # no terminal: nobody to read them
        return
    os.write(1, f"\r\n[legion] {program} exited {code}: press Enter to return to the "
                "dashboard\r\n".encode())
    os.read(0, 1024)


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

    def _host(self) -> HostOperations | None:
        ops = self._ops
        if not isinstance(ops, HostOperations):
            self._say("Attach opens an agent's UI only in the dashboard that hosts it.", True)
            return None
        return ops

    def _plan(self, host: HostOperations, node_id: str) -> AttachPlan | None:
        try:
            return host.attach_plan(node_id)
        except (AttachRefused, OpError) as err:
            self._say(str(err) if isinstance(err, AttachRefused) else err.message, True)
            return None

    def start(self, node_id: str) -> None:
        """`A`: refuse what cannot be attached; ask before aborting a turn under way."""
        host = self._host()
        if self.attached is not None or host is None:
            return
        plan = self._plan(host, node_id)
        if plan is None:
            return
        if plan.turn_running:
            self._ask(ConfirmRequest("attach", node_id, abort_first_prompt(plan)))
            return
        self._run(self._hand_over(host, node_id, abort=False))

    def answered(self, request: ConfirmRequest, confirmed: bool) -> None:
        host = self._host()
        if not confirmed or host is None:
            self._say("Cancelled — nothing aborted, nothing opened.", False)
            return
        assert request.node_id is not None
        self._run(self._hand_over(host, request.node_id, abort=True))

    async def _hand_over(self, host: HostOperations, node_id: str, *, abort: bool) -> None:
        """End the node's control process cleanly (its turn aborted first when the user
        said so), give the terminal to the agent's own UI, and take the node back when
        it exits: idle on its session, steerable."""
        try:
            if abort:
                self._say(await self._ops.act("abort", node_id), False)
            plan = self._plan(host, node_id)
            if plan is None:
                return
            if plan.turn_running:
                self._say(f"{plan.name} is in a turn again — not attached.", True)
                return
            await host.hand_over(node_id)
        except OpError as err:
            self._say(err.message, True)
            return
        before = session_entries(plan.session_file)
        code = await self._attach(plan)  # None: it did not start (said why)
        said = []
        if code is not None:
            said.append(back_line(plan, session_entries(plan.session_file) - before, code))
        try:  # stopped or interrupted before: it stays so (`r`)
            receipt = await host.take_back(node_id, resume=plan.give_back)
        except OpError as err:
            self._say(". ".join([*said, err.message]), True)
            return
        said += [receipt] if receipt else []
        if said:
            self._say(". ".join(said), bool(code))

    async def _attach(self, plan: AttachPlan) -> int | None:
        """Run the UI on the terminal; its exit status, None when it could not start."""
        app = self._app
        self.attached = plan
        try:
            with app.batch_update(), app.suspend():
                env = agent_environment({**os.environ, **plan.env}, plan.argv[0])
                child = await asyncio.create_subprocess_exec(*plan.argv, cwd=plan.cwd, env=env)
                code = await child.wait()
                if code:
                    await asyncio.to_thread(_wait_for_enter, plan.program, code)
        except SuspendNotSupported:
            self._say("This terminal cannot be handed to another program (a web view).", True)
            return None
        except OSError as err:
            self._say(f"cannot start {plan.program}: {err}", True)
            return None
        finally:
            self.attached = None
        app.refresh(layout=True)
        return code
