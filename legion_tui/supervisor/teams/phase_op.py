"""`legion phase --to P` (SPEC §6.4): a team moves itself along its declared machine.

Leaving the machine's verification phase runs the contract's `legion-verify` commands
first (G6; the roster's `verifying` mark lets a stop sweep them meanwhile). The move is
decided on the team as it stands after that run; a refusal lists the legal next phases
and writes nothing. A declared failure reaches the parent as a letter (when the mail
service runs).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.model import EventType, NodeStatus
from legion_tui.model_records import Node
from legion_tui.phases.load import machine_from_json
from legion_tui.wire.names import OpError

if TYPE_CHECKING:
    from legion_tui.phases import Machine, TransitionResult, Verification
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.teams.team_worktrees import TeamWorktrees
    from legion_tui.supervisor.teams.verify import VerificationResult

__all__ = ["PhaseOp"]

log = logging.getLogger(__name__)


class PhaseOp:
    def __init__(self, ctx: HostContext, worktrees: TeamWorktrees) -> None:
        self._ctx = ctx
        self._model = ctx.model
        self._names = ctx.names
        self._record = ctx.record
        self._roster = ctx.roster
        self._run = ctx.run  # its dir and id: fixed for the run (a reopen keeps both)
        self._clock = ctx.clock
        # The lead's contract, and the folder its verification runs in.
        self._worktrees = worktrees

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
        from legion_tui.supervisor.teams.verify import needs_verification

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
        from legion_tui.phases import MachineError

        if lead.machine is None or lead.phase is None:
            raise OpError("NO_PHASES", receipts.no_phases(lead.name))
        if not lead.live:
            raise OpError("ENDED", f"{lead.name} has ended ({lead.status.value})")
        try:
            return machine_from_json(lead.machine)
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
        from legion_tui.supervisor.teams.verify import verify_contract

        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self._clock()))
        self._roster.verifying.add(lead.id)  # a stop now sweeps the commands too
        try:
            verified = await verify_contract(
                self._worktrees.contract_path(lead),
                cwd=self._worktrees.cwd_for(lead),
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
            contract_path=self._worktrees.contract_path(lead),
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
        await self._record.update_node(lead.id, **fields)
        await self._record.event(lead.id, EventType.PHASE_CHANGE, change)
        self._record.notify()

    async def _report_failure(self, lead: Node, reason: str | None) -> None:
        """A declared failure is a verdict: the parent hears it (upstream #309)."""
        mail = self._ctx.mail
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
        from legion_tui.supervisor.teams.verify import verification_gate

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
