"""`legion_tui.ops.Operations` for the dashboard: node ids, acting as root, on the
supervisor of this process (`front.Front`): a control verb runs the socket's own handler
for it (`server_ops.OPS`), in-process; the rest call the part that owns them."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui.model import ATTACHED_REASON, NodeStatus
from legion_tui.runs.folder import session_file
from legion_tui.supervisor.socket.server_ops import OPS
from legion_tui.wire.names import ROOT_ID, OpError

if TYPE_CHECKING:
    from legion_tui.agents.attach import AttachPlan
    from legion_tui.agents.cards import CardSet
    from legion_tui.ops import ControlVerb, Workspace
    from legion_tui.supervisor.front import Front
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["RootOperations"]

log = logging.getLogger(__name__)


class RootOperations:
    read_only = False

    def __init__(self, supervisor: Front) -> None:
        self.supervisor = supervisor

    async def act(self, verb: ControlVerb, node_id: str, **fields: bool | str) -> str:
        result = await OPS[verb](self.supervisor, ROOT_ID, {**fields, "name": node_id})
        return str(result["receipt"])

    async def spawn(self, parent_id: str, requests: Sequence[ChildRequest]) -> str:
        """The dashboard's new agent (or a fan-out's attempts): the socket's `spawn` op,
        the caller being their parent (root, or the lead they join). A phases file is
        read here, from the project, with its own lines in a refusal — as `legion spawn
        --phases` does."""
        batch = []
        for request in requests:
            if isinstance(request.phases, str):
                from legion_tui.phases import MachineError, load_machine_file

                path = self.supervisor.ctx.project_dir / request.phases
                try:
                    machine = load_machine_file(str(path)).to_dict()
                except MachineError as err:
                    raise OpError("PHASES", str(err)) from err
                request = dataclasses.replace(request, phases=machine)
            batch.append(request)
        nodes = await self.supervisor.launcher.spawn(parent_id, batch)
        failed = [f"Failed to start {n.path}: {n.error}" for n in nodes
                  if n.status is NodeStatus.FAILED]  # fmt: skip
        if failed:
            raise OpError("START_FAILED", "; ".join(failed))
        said = []
        for node in nodes:
            said.append(f"Spawned {node.path} ({node.id})"
                        + (" — simulated" if node.simulated else ""))  # fmt: skip
            warning = self.supervisor.teams.launch_warning(node.id)
            said += [f"warning: {warning}"] if warning else []
        return "\n".join(said)

    async def role_cards(self) -> CardSet:
        return self.supervisor.ctx.cards.reload()

    def workspace(self, node_id: str) -> Workspace | None:
        from legion_tui.ops import Workspace

        found = self.supervisor.teams.workspace_of(node_id)
        return None if found is None else Workspace(*found)

    def attach_plan(self, node_id: str) -> AttachPlan:
        """The node's agent UI on its session, as its backend would run it (agents.attach)."""
        from legion_tui.agents import attach

        sup, ctx = self.supervisor, self.supervisor.ctx
        node = ctx.names.node(node_id)
        link = Path(node.session_file or session_file(ctx.run.dir, node.id))
        link = link if link.is_absolute() else ctx.run.dir / link
        cwd = sup.teams.cwd_for(node)
        cards = ctx.cards
        command = cards.command_of(node)
        argv, session = attach.attach_argv(node.kind, node.name, link, command, cwd, path=None)
        handle = ctx.roster.handle(node_id)
        live = handle is not None and handle.exited is None
        busy = live and handle is not None and handle.turn_running()
        env = cards.env_of(node)
        return attach.AttachPlan(
            node.name, Path(argv[0]).name, argv, cwd, session, live, env, turn_running=busy,
            # Taken back as it was: a live or settled agent (a failed or retired one stays).
            give_back=node.live or node.status is NodeStatus.SETTLED,
        )

    async def hand_over(self, node_id: str) -> None:
        """Before an attach: the node's session is its UI's until `take_back` (no resume,
        steer or letter starts a second writer on it); its control process, if it runs,
        ends cleanly (its turn is over, or aborted first), the node left `attached`."""
        ctx = self.supervisor.ctx
        node = ctx.names.node(node_id)
        handle = ctx.roster.handle(node_id)
        live = handle is not None and handle.exited is None
        if live and handle is not None and handle.turn_running():
            raise OpError("BUSY", f"{node.name} is in a turn: abort it before attaching")
        ctx.roster.in_own_ui.add(node_id)
        if not live:
            return
        try:
            done = await self.supervisor.stops.retire(node, ATTACHED_REASON, force=False)
        except BaseException:
            ctx.roster.in_own_ui.discard(node_id)
            raise
        if done.survivors:  # never two writers on one session
            ctx.roster.in_own_ui.discard(node_id)
            raise OpError(
                "STILL_RUNNING",
                f"{node.name}'s agent did not end (pids {done.survivors}) — not attached",
            )

    async def take_back(self, node_id: str, *, resume: bool = True) -> str | None:
        """After an attach: the session is legion's again; with `resume`, the node's agent
        started again on it, idle, and the node settled on what the session now says
        (the receipt). Without, the node stays as it was (stopped, failed: `r`)."""
        self.supervisor.ctx.roster.in_own_ui.discard(node_id)
        if not resume:
            return None
        return await self.supervisor.control.resume(ROOT_ID, node_id, idle=True)

    def terminal_input(self, node_id: str, data: bytes) -> bool:
        handle = self.supervisor.ctx.roster.handle(node_id)
        terminal = getattr(handle, "terminal", None)  # an exec child's pty (ExecHandle)
        if handle is None or handle.exited is not None or terminal is None:
            return False
        return bool(terminal.write(data))
