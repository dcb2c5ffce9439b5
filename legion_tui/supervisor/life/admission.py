"""Admission: a spawn batch becomes plans — cards, kinds, phase machines, names and
budgets all decided and checked before any row, file or process exists. Nothing here
writes a node; an over-budget batch leaves only its `budget_exceeded` event.

What one child asks for, and the budgets, are `wire/spawn_request.py`'s; the role cards
(read again at each spawn, each node's card, a card's depth cap) are `cards.RoleCards`'.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui.agents.cards import RoleCard
from legion_tui.inert import inert
from legion_tui.model import CARD_KINDS, EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.runs.folder import session_file
from legion_tui.supervisor.backend import LaunchSpec, backend_for
from legion_tui.wire.names import ROOT_ID, OpError
from legion_tui.wire.spawn_request import ChildRequest, check_task

if TYPE_CHECKING:
    from legion_tui.agents.resolve import Launch
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.teams.teams import Teams

__all__ = ["Admission", "Plan", "program_refusal"]

log = logging.getLogger(__name__)


def program_refusal(card: RoleCard, launch: Launch, project_dir: Path) -> str | None:
    """Why `launch`'s program is not there, or None: asked before a row exists (and, by
    `legion run`, before the host exists) — not a node that exists only to fail."""
    from legion_tui.agents.resolve import find_program

    if not launch.command and launch.kind not in ("pi", "claude", "codex"):
        return None  # exec without a command: refused with its own reason
    program = launch.command[0] if launch.command else launch.kind
    if "{" in program:
        return None  # filled at launch (a placeholder names it): the launch will tell
    if find_program(program, cwd=project_dir, path=None) is not None:
        return None
    return (f"'{card.name}' (kind {launch.kind}, {card.source}) runs {program!r}, which is not "
            "on PATH (nor a file from the project): nothing was spawned")  # fmt: skip


@dataclass(slots=True)
class Plan:
    """A validated child: everything decided before anything exists."""

    node: Node
    request: ChildRequest
    card: str  # the role card's name (the node's `role` is the role the card plays)
    command: list[str] | None
    isolate: bool
    env: Mapping[str, str]  # `[agent.KIND] env` (legion_tui.agents.resolve)


class Admission:
    def __init__(self, ctx: HostContext, teams: Teams) -> None:
        self._ctx = ctx
        self._model = ctx.model
        self._names = ctx.names
        self._record = ctx.record
        self._run = ctx.run  # its id and folders: fixed for the run (a reopen keeps them)
        self._project_dir = ctx.project_dir
        self._cards = ctx.cards
        self._teams = teams  # the repository a centurion branches from

    async def plan(self, caller: Node, requests: Sequence[ChildRequest]) -> list[Plan]:
        is_root = caller.id == ROOT_ID
        for req in requests:
            check_task(req.task)
            # Inert before any row or prompt holds it: a parent agent wrote it (SPEC §10).
            req.task = inert(req.task)
        self._cards.reload()  # as they are on disk now: edited cards need no restart
        from legion_tui.agents.cards import CardError
        from legion_tui.phases import DeclarationRefused, check_centurion_dispatch

        # `role` in a request names a role CARD; the card says which of the four roles
        # the node plays (a project card `runner` may play `worker`).
        cards: list[RoleCard] = []
        for req in requests:
            try:
                cards.append(self._cards.cards.get(req.role))
            except CardError as err:
                raise OpError("CARD", str(err)) from err
        for card, req in zip(cards, requests, strict=True):
            try:  # G1: only root dispatches a centurion
                check_centurion_dispatch(
                    card.role, caller_is_root=is_root, caller=caller.name, node=caller.path
                )
            except DeclarationRefused as err:
                raise OpError("FORBIDDEN", str(err)) from err
            if req.kind is not None and req.kind not in CARD_KINDS:
                raise OpError("BAD_REQUEST", f"unknown kind {req.kind!r} (one of {CARD_KINDS})")
        # `auto` → the agent that runs, decided before any row exists (a refusal spawns
        # nothing); the node records the resolved kind.
        launches = [
            self._resolve(caller, card, req) for card, req in zip(cards, requests, strict=True)
        ]
        machines = [
            _declared_machine(req, card, caller) for req, card in zip(requests, cards, strict=True)
        ]
        names = self._names.child_names(caller, requests, [launch.kind for launch in launches])
        await self.check_budgets(caller, len(requests))
        await self._fanout_base(requests, launches)
        plans: list[Plan] = []
        now = self._ctx.clock()
        from legion_tui.git.worktree import own_worktree
        from legion_tui.settings import load_settings

        per_agent = load_settings(self._project_dir).settings.worktree_per_agent
        for req, card, name, (machine_json, start_phase), launch in zip(
            requests, cards, names, machines, launches, strict=True
        ):
            kind = launch.kind
            isolate = card.isolate if req.isolate is None else bool(req.isolate)
            wants_tree = card.worktree if req.worktree is None else bool(req.worktree)
            # A centurion owns a worktree, and so does an agent started from root on its
            # own (`own_worktree`), only in a git repository; a process is what gives it
            # its own cwd (SPEC §6.1).
            repo = self._teams.worktree_repo(kind)
            own = req.group is not None or own_worktree(is_root, card.role, req.worktree,
                                                        per_agent)  # fmt: skip
            if ((card.role == "centurion" and wants_tree) or own) and repo is not None:
                isolate = isolate or (repo / ".git").exists()
            node_id = f"{name}-{secrets.token_hex(3)}"
            probe = LaunchSpec(
                node_id=node_id,
                run_id=self._run.run_id,
                name=name,
                role=card.role,
                kind=kind,
                task=req.task,
                session_file=session_file(self._run.dir, node_id),
                run_dir=self._run.dir,
                cwd=self._project_dir,
                socket_path=self._ctx.socket_path,
                isolate=isolate,
            )
            node = Node(
                id=node_id,
                run_id=self._run.run_id,
                parent_id=caller.id,
                name=name,
                path=f"{caller.path}/{name}",
                role=card.role,
                kind=kind,
                backend=backend_for(probe),
                status=NodeStatus.STARTING,
                phase=start_phase,
                phase_since=now if start_phase else None,
                machine=machine_json,
                session_file=str(probe.session_file),
                task=req.task,
                created_at=now,
                updated_at=now,
                attempt_group=req.group,
            )
            command = list(launch.command) or None
            plans.append(Plan(node, req, card.name, command, isolate, launch.env))
        return plans

    async def _fanout_base(
        self, requests: Sequence[ChildRequest], launches: Sequence[Launch]
    ) -> None:
        """The commit every attempt of a fan-out is cut from, read once (a commit made
        while they start must not split them); refused, before any row, where there is
        no repository to cut worktrees from: attempts in one folder would overwrite each
        other's work."""
        attempts = [(req, launch) for req, launch in zip(requests, launches, strict=True)
                    if req.group is not None]  # fmt: skip
        if not attempts:
            return
        from legion_tui.git.worktree import WorktreeError, head_commit

        repos = {self._teams.worktree_repo(launch.kind) for _req, launch in attempts}
        if None in repos:
            raise OpError("BAD_REQUEST", "a simulated attempt needs the demo's sandbox: in a "
                          "project only real agents fan out; nothing was spawned")  # fmt: skip
        repo = next(r for r in repos if r is not None)
        try:
            base = await head_commit(repo)
        except WorktreeError as err:
            raise OpError("BAD_REQUEST", f"a fan-out gives each attempt its own worktree, "
                          f"cut from one commit: {err}; nothing was spawned") from err
        for req, _launch in attempts:
            req.base = base

    def _resolve(self, caller: Node, card: RoleCard, req: ChildRequest) -> Launch:
        """The kind and command one request runs (`agents.resolve`); NO_AGENT when an
        `auto` launch has no agent. Settings are read now, so a fixed `[agent]` counts at
        the next spawn without restarting the host."""
        from legion_tui.agents.resolve import MODEL_KINDS, NoAgent, resolve_launch, with_model
        from legion_tui.settings import AgentSettings, SettingsProblem, load_settings

        default_kind = self._ctx.options.default_kind
        agent = AgentSettings(default_kind)
        problems: tuple[SettingsProblem, ...] = ()
        # An auto card run as `--kind KIND` takes `[agent.KIND]` even where this host
        # says what `auto` means (`default_kind`: the demo, the tests).
        if card.kind == "auto" and (default_kind is None or req.kind not in (None, "auto")):
            result = load_settings(self._project_dir)
            agent, problems = result.settings.agent, result.problems
        try:
            launch = resolve_launch(
                card.kind,
                card.command,
                requested=req.kind,
                agent=agent,
                problems=problems,
                simulated_parent=caller.simulated,
                what=f"'{card.name}' (kind: auto)",
                cwd=self._project_dir,
            )
        except NoAgent as err:
            raise OpError("NO_AGENT", str(err)) from err
        if req.model is not None:
            if launch.kind not in MODEL_KINDS:
                raise OpError(
                    "BAD_REQUEST", f"a model is chosen for pi, claude or codex; "
                    f"'{card.name}' runs as {launch.kind}; nothing was spawned",
                )
            launch = replace(launch, command=with_model(launch.kind, launch.command, req.model))
        if launch.kind != "sim" and (refusal := program_refusal(card, launch, self._project_dir)):
            raise OpError("NOT_FOUND", refusal)
        if launch.kind == "exec" and not launch.command:
            # Refused here, before a row exists: a launch would only fail (and a node left
            # `starting` would hold a budget slot for ever).
            raise OpError(
                "BAD_REQUEST",
                f"'{card.name}' has no command, and kind exec runs one: give the card a "
                "`command: [...]` (or choose another --kind); nothing was spawned",
            )
        return launch

    async def check_budgets(self, caller: Node, count: int) -> None:
        depth = self._names.depth(caller.id) + 1
        live_children = sum(
            1 for c in self._model.children(caller.id) if self._model.nodes[c].node.live
        )
        active = sum(1 for v in self._model.nodes.values() if v.node.live and v.node.id != ROOT_ID)
        b = self._ctx.options.budgets
        problem: tuple[str, int, int] | None = None
        if depth > b.max_depth:
            problem = ("maxDepth", b.max_depth, depth)
        elif live_children + count > b.max_children:
            problem = ("maxChildrenPerNode", b.max_children, live_children + count)
        elif active + count > b.max_active:
            problem = ("maxActiveNodes", b.max_active, active + count)
        else:
            # A card's maxSubagentDepth caps how many levels of descendants may grow
            # below a node of that role: 0 = it spawns nothing, 1 = children only.
            view = self._model.nodes.get(caller.id)
            while view is not None and view.node.id != ROOT_ID:
                card_name = self._cards.card_name(view.node)
                cap = self._cards.depth_cap(card_name)
                if cap is not None and depth - self._names.depth(view.node.id) > cap:
                    problem = (f"maxSubagentDepth of {card_name}", cap, depth)
                    break
                view = self._model.nodes.get(view.node.parent_id or "")
        if problem is None:
            return
        budget, limit, wanted = problem
        await self._record.event(
            caller.id,
            EventType.BUDGET_EXCEEDED,
            {"budget": budget, "limit": limit, "requested": wanted, "children": count},
        )
        raise OpError(
            "BUDGET",
            f"over budget: {budget} is {limit}, this spawn would need {wanted}; "
            "nothing was spawned",
        )


def _declared_machine(
    req: ChildRequest, card: RoleCard, caller: Node
) -> tuple[str | None, str | None]:
    """(machine JSON, start phase) of the machine the new node runs under, or (None, None).
    G2–G4 (upstream centurion-declared-phases): only root passes phases, only for a
    centurion, and the machine validates and reaches a terminal."""
    from legion_tui.phases import DeclarationRefused, declared_machine

    try:
        machine = declared_machine(
            req.phases,
            role=card.role,  # the role the card plays (`lead` may play centurion), not its name
            caller_is_root=caller.id == ROOT_ID,
            caller=caller.path,
            card_machine=card.phases,
        )
    except DeclarationRefused as err:
        raise OpError("PHASES", str(err)) from err
    if machine is None:
        return None, None
    return machine.to_json(), machine.start
