"""Teams (SPEC §6.4, §6.7): a centurion's worktree for its launch and its delivery, the
`legion phase` op along the team's declared machine, stints (revive / restore), and the
`legion-verify` run a move out of the verification phase needs.

Every write goes through the record; the roster's `verifying` mark lets a stop sweep a
verification's commands; the mail service (when running) carries a declared failure to
the parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.model import EventType, Node, NodeStatus
from legion_tui.ops import OpError

if TYPE_CHECKING:
    from legion_tui.agents.cards import RoleCard
    from legion_tui.mail.service import MailService
    from legion_tui.phases import Machine, TransitionResult, Verification
    from legion_tui.phases.timeouts import ReviveStore
    from legion_tui.state import Clock, LegionModel
    from legion_tui.supervisor.admission import ChildRequest
    from legion_tui.supervisor.naming import Names
    from legion_tui.supervisor.record import Record
    from legion_tui.supervisor.roster import Roster
    from legion_tui.supervisor.runs import RunInfo
    from legion_tui.supervisor.verify import VerificationResult
    from legion_tui.supervisor.worktree import Worktree

__all__ = ["Teams"]

log = logging.getLogger(__name__)


def _exists(path: str) -> bool:
    # One stat; cheap enough to do inline in the loop.
    return os.path.exists(path)


class Teams:
    def __init__(
        self,
        model: LegionModel,
        names: Names,
        record: Record,
        roster: Roster,
        *,
        run: RunInfo,
        project_dir: Path,
        clock: Clock,
        card_for: Callable[[Node], RoleCard | None],
        sandbox: Callable[[], Path | None],
        echo: Callable[[], ReviveStore],
        mail: Callable[[], MailService | None],
    ) -> None:
        self._model = model
        self._names = names
        self._record = record
        self._roster = roster
        self._run = run  # its dir and id: fixed for the run (a reopen keeps both)
        self._project_dir = project_dir
        self._clock = clock
        self._card_for = card_for  # the node's role card, None when it has none loaded
        self._sandbox = sandbox  # the host's own repository, when it has one (the demo)
        self._echo = echo  # the ledger through which rows and events reach the model at once
        self._mail = mail
        self._worktrees: dict[str, Worktree] = {}  # centurion id → its worktree
        self._worktree_lock = asyncio.Lock()

    # ----- worktrees (SPEC §6.7) ------------------------------------------------------------
    async def worktree_for_launch(
        self, node: Node, req: ChildRequest | None, *, resume: bool
    ) -> str | None:
        """Give a centurion — and a worker or scout started from root, unless
        `[worktrees] perAgent = false` — its worktree (git repositories only) before it
        starts; return the one warning a demoted request gets. A resumed node finds its
        old one. Simulated agents get one only from a sandbox (`worktree_repo`)."""
        from legion_tui.settings import load_settings
        from legion_tui.supervisor.naming import ROOT_ID
        from legion_tui.supervisor.worktree import (
            Worktree,
            WorktreeError,
            demote_worktree,
            own_worktree,
            prepare_worktree,
        )

        if node.id in self._worktrees:
            return None
        if resume:
            event = self._record.last_event(node.id, EventType.NODE_LAUNCHED)
            data = event.data if event is not None else {}
            if data.get("worktree") and _exists(str(data["worktree"])):
                self._worktrees[node.id] = Worktree(
                    path=Path(str(data["worktree"])),
                    branch=str(data.get("branch", "")),
                    base_sha=str(data.get("base_sha", "")),
                    cwd=Path(str(data.get("worktree_cwd", data["worktree"]))),
                )
            return None
        card = self._card_for(node)
        card_tree = card.worktree if card is not None else False
        wants = req.worktree if req is not None and req.worktree is not None else card_tree
        per_agent = load_settings(self._project_dir).settings.worktree_per_agent
        asked = req.worktree if req is not None else None
        own = own_worktree(node.parent_id == ROOT_ID, node.role, asked, per_agent)
        repo = self.worktree_repo(node.kind)
        if repo is None or (node.role == "centurion" and wants is False):
            # No repository to branch from, or a lead dispatched without one on purpose.
            return demote_worktree(node.role, node.name, wants, own=own).warning
        try:
            # Launches of one batch run together; git's own locks are not made for two
            # `worktree add` at once in one repository.
            async with self._worktree_lock:
                tree, warning = await prepare_worktree(
                    repo, node.role, node.name, wants, own=own
                )
        except WorktreeError as err:
            log.warning("no worktree for %s: %s", node.path, err)
            return f"no worktree for {node.name}: {err}"
        if tree is not None:
            self._worktrees[node.id] = tree
        if warning:
            log.warning("%s", warning)
        return warning

    def worktree_repo(self, kind: str) -> Path | None:
        """The repository a centurion of `kind` branches from: the host's sandbox when it
        has one, else the project — except for simulated agents, which never branch in
        the user's repository (they would leave `legion/*` branches for a pretend run)."""
        sandbox = self._sandbox()
        if sandbox is not None:
            return sandbox
        return None if kind == "sim" else self._project_dir

    def launch_warning(self, node_id: str) -> str | None:
        """The warning a node's launch carried (a demoted worktree request), if any."""
        event = self._record.last_event(node_id, EventType.NODE_LAUNCHED)
        warning = event.data.get("warning") if event is not None else None
        return str(warning) if warning else None

    def worktree_data(self, node_id: str, warning: str | None) -> dict[str, Any]:
        """What a `node_launched` event says of the node's worktree (and its warning)."""
        data: dict[str, Any] = {}
        tree = self._worktrees.get(node_id)
        if tree is not None:
            data.update(
                worktree=str(tree.path),
                worktree_cwd=str(tree.cwd),
                branch=tree.branch,
                base_sha=tree.base_sha,
            )
        if warning:
            data["warning"] = warning
        return data

    def worktree_of(self, node_id: str) -> Worktree | None:
        """The worktree a node works in: its own (a centurion's) or its nearest
        ancestor's; None when the team works in the project itself."""
        holder = self.holder_of(node_id)
        return None if holder is None else self._worktrees[holder]

    def holder_of(self, node_id: str) -> str | None:
        """The node whose worktree `node_id` works in: itself or its nearest ancestor
        holding one; None when it works in the project itself."""
        view = self._model.nodes.get(node_id)
        while view is not None:
            if view.node.id in self._worktrees:
                return view.node.id
            view = self._model.nodes.get(view.node.parent_id or "")
        return None

    def cwd_for(self, node: Node) -> Path:
        tree = self.worktree_of(node.id)
        return Path(tree.cwd) if tree is not None else self._project_dir

    def contract_path(self, node: Node) -> Path:
        """`<run>/contracts/<name>.md` (where the sim writes it), else `contract.md` in
        the team's working folder (the centurion card's wording)."""
        in_run = self._run.dir / "contracts" / f"{node.name}.md"
        if in_run.exists():
            return in_run
        local = self.cwd_for(node) / "contract.md"
        return local if local.exists() else in_run

    async def delivery_of(self, node_id: str) -> dict[str, Any] | None:
        """A centurion's delivery: its branch + HEAD sha (+ a PR/MR link only if gh/glab
        reports one — never an invented URL, SPEC §6.7); None without a worktree."""
        tree = self._worktrees.get(node_id)
        if tree is None:
            return None
        from legion_tui.supervisor.worktree import WorktreeError, delivery

        try:
            d = await delivery(tree)
        except WorktreeError as err:
            log.warning("no delivery for %s: %s", node_id, err)
            return None
        return {
            "branch": d.branch,
            "head_sha": d.head_sha,
            "link": d.link,
            "commits": d.commits,
            "dirty": d.dirty,
        }

    # ----- stints ---------------------------------------------------------------------------
    async def revive_stint(self, node: Node) -> Node | None:
        """A team woken after it ended starts a new stint in its phase (SPEC §6.4,
        upstream #357): `phase_since` moves to now and a `phase_change` from == to with
        reason `revived` says so, so its clock may time it out again and the notices of
        the old stint go OBSOLETE. Returns the row before (to give the clock back if the
        revival fails); None when there is no clock to restart (no declared machine, or
        a terminal phase, where the clock never runs)."""
        from legion_tui.phases.machine import TERMINALS
        from legion_tui.phases.timeouts import revive_stint

        if node.phase is None or node.phase in TERMINALS:
            return None
        # Through the echo: the node row and the event reach the live model at once.
        await revive_stint(self._echo(), node, self._clock())
        return node

    async def restore_stint(self, before: Node) -> None:
        """A revival whose launch did not happen keeps the old stint (upstream PR #363):
        a moved clock for a run that never was would de-dupe the next real stint away."""
        from legion_tui.phases.timeouts import restore_stint

        await restore_stint(self._echo(), before)

    # ----- the phase op (SPEC §6.4) ---------------------------------------------------------
    async def phase(
        self,
        caller_id: str,
        to: str,
        *,
        note: str | None = None,
        evidence: str | None = None,
        reason: str | None = None,
        supersedes: Sequence[str] = (),
    ) -> dict[str, Any]:
        """`legion phase --to P`: a team moves itself along its declared machine. Leaving
        the machine's verification phase runs the contract's `legion-verify` commands
        first (G6). Refusals list the legal next phases; nothing is written then."""
        from legion_tui.supervisor.verify import needs_verification

        lead = self._names.caller(caller_id)
        machine = self._machine_of(lead)
        current = str(lead.phase)
        children = [self._model.nodes[c].node for c in self._model.children(lead.id)]
        superseded = self._superseded(lead, children, supersedes)
        verification: Verification | None = self._record.stint_verification(lead)
        verified: VerificationResult | None = None
        if needs_verification(machine, current, to):
            verified, lead = await self._verify(lead, current)
            verification = verified.outcome
        decision = self._decide(
            machine, lead, children, superseded, verification, current, to, reason
        )
        await self._move(lead, current, to, decision, superseded, note, evidence, reason)
        if to == "failed":
            await self._report_failure(lead, reason)
        return self._phase_reply(machine, lead, current, to, verified)

    def _machine_of(self, lead: Node) -> Machine:
        """The caller's live, declared machine, or the refusal that says why not."""
        from legion_tui.phases import Machine, MachineError

        if lead.machine is None or lead.phase is None:
            raise OpError("NO_PHASES", receipts.no_phases(lead.name))
        if not lead.live:
            raise OpError("ENDED", f"{lead.name} has ended ({lead.status.value})")
        try:
            return Machine.from_json(lead.machine)
        except (MachineError, ValueError) as err:
            raise OpError(
                "PHASES", f"{lead.name}'s stored phase machine is unreadable: {err}"
            ) from err

    @staticmethod
    def _superseded(lead: Node, children: list[Node], supersedes: Sequence[str]) -> list[Node]:
        """`--supersedes`: failed children of the lead a later one stands in for."""
        by_name = {c.name: c for c in children}
        superseded: list[Node] = []
        for name in supersedes:
            child = by_name.get(name)
            if child is None:
                raise OpError("NOT_FOUND", f"--supersedes: {lead.name} has no child {name!r}")
            if child.status is not NodeStatus.FAILED:
                raise OpError(
                    "BAD_REQUEST", f"--supersedes: {name} has not failed ({child.status.value})"
                )
            superseded.append(child)
        return superseded

    async def _verify(self, lead: Node, current: str) -> tuple[VerificationResult, Node]:
        """Run the contract's `legion-verify` commands (a stop sweeps them meanwhile) and
        record the result; returns it with the lead's row as it is afterwards."""
        from legion_tui.supervisor.verify import verify_contract

        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self._clock()))
        self._roster.verifying.add(lead.id)  # a stop now sweeps the commands too
        try:
            verified = await verify_contract(
                self.contract_path(lead),
                cwd=self.cwd_for(lead),
                output_file=self._run.dir / "verify" / f"{lead.name}-{stamp}.log",
                run_id=self._run.run_id,
                node_id=lead.id,
            )
        finally:
            self._roster.verifying.discard(lead.id)
        data = verified.event_data()
        data.update(phase=current, phase_since=lead.phase_since)
        await self._record.event(lead.id, EventType.VERIFICATION_RESULT, data)
        # The run took a while (up to minutes): a stop may have retired the team (phase
        # `aborted`) or another move may have landed. Decide on the row as it is now,
        # never overwrite an ended team's phase.
        lead = self._names.node(lead.id)
        if not lead.live or lead.id in self._roster.stopping:
            raise OpError("ENDED", f"{lead.name} has ended or is being stopped")
        if lead.phase != current:
            raise OpError(
                "PHASE_REFUSED",
                f"{lead.name} moved to {lead.phase} while verification ran; nothing written",
            )
        return verified, lead

    def _decide(
        self,
        machine: Machine,
        lead: Node,
        children: list[Node],
        superseded: list[Node],
        verification: Verification | None,
        current: str,
        to: str,
        reason: str | None,
    ) -> TransitionResult:
        """The machine's answer on the team as it stands; a refusal writes nothing."""
        from legion_tui.phases import snapshot_of

        snapshot = snapshot_of(
            lead,
            children,
            contract_path=self.contract_path(lead),
            handled=[*self._record.handled_ids(lead), *(c.id for c in superseded)],
            verification=verification,
            max_rework=machine.max_rework,
        )
        decision = machine.check_transition(snapshot, current, to, reason=reason, actor="self")
        if not decision:
            raise OpError("PHASE_REFUSED", decision.message)
        return decision

    async def _move(
        self,
        lead: Node,
        current: str,
        to: str,
        decision: TransitionResult,
        superseded: list[Node],
        note: str | None,
        evidence: str | None,
        reason: str | None,
    ) -> None:
        """Write the move: handled children, the row (phase, stint, rework), the event."""
        for child in superseded:
            await self._record.event(
                lead.id, EventType.NODE_HANDLED, {"node_id": child.id, "by": "supersedes"}
            )
        change: dict[str, Any] = {"from": current, "to": to}
        for key, value in (("note", note), ("evidence", evidence), ("reason", reason)):
            if value:
                change[key] = value
        if superseded:
            change["supersedes"] = [c.name for c in superseded]
        fields: dict[str, Any] = {"phase": to, "phase_since": self._clock()}
        if decision.rework:
            fields["rework_count"] = lead.rework_count + 1
            change["rework"] = fields["rework_count"]
        node: Node = await self._record.ledger.update_node(lead.id, **fields)
        self._model.upsert(node)
        await self._record.event(lead.id, EventType.PHASE_CHANGE, change)
        self._record.notify()

    async def _report_failure(self, lead: Node, reason: str | None) -> None:
        """A declared failure is a verdict: the parent hears it (upstream #309)."""
        mail = self._mail()
        if lead.parent_id is None or mail is None:
            return
        with contextlib.suppress(OpError):
            await mail.send(
                lead.id,
                "parent",
                receipts.team_failed_subject(lead.name),
                reason or "",
                kind="report",
                urgency="action-needed",
            )

    @staticmethod
    def _phase_reply(
        machine: Machine,
        lead: Node,
        current: str,
        to: str,
        verified: VerificationResult | None,
    ) -> dict[str, Any]:
        from legion_tui.supervisor.verify import verification_gate

        reply: dict[str, Any] = {
            "phase": to,
            "from": current,
            "receipt": receipts.phase_moved(lead.name, current, to),
        }
        if verified is not None:
            gate = machine.phase(verification_gate(machine))
            gated = gate is not None and "verification_passed" in gate.exit_requires("done")
            reply["verification"] = verified.gate_summary(gated)
            reply["receipt"] += f" Verification: {reply['verification']}"
        return reply
