"""A declared phase machine as data, and the one function that judges a transition.

Shape (upstream declarative-phase-machine-v5, plus the per-edge form upstream grew later):
each phase has a phase-level `require` (ANDed into EVERY exit, failed included — upstream
centurion-declared-phases I5) and a `next` set; an edge may add its own `require` and be
marked `rework` (taking it spends one rework). `done`, `failed` and `aborted` are the three
terminals and are never declared as working phases:

- `done`    — through a declared `→ done` edge whose conditions hold; a machine without
              one leaves `done` to the parent or supervisor (G5), and then only when the
              phase's own `require` holds;
- `failed`  — always needs a reason; the parent or supervisor may always declare it; the
              team itself when its phase declares a `failed` edge that holds, when all its
              children failed, or when its rework is exhausted;
- `aborted` — a parent retire only, and that one always lands: when the current phase
              cannot be resolved the result is marked `forced` (upstream #351). A team
              already in `done`/`failed` keeps that phase (code `terminal`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from legion_tui import receipts
from legion_tui.phases.conditions import (
    DEFAULT_MAX_REWORK,
    Condition,
    TeamSnapshot,
    evaluate,
    explain,
    unmet,
)

__all__ = ["NEEDS_REASON", "TERMINALS", "Actor", "Edge", "Machine", "PhaseSpec", "TransitionResult"]

TERMINALS: tuple[str, ...] = ("done", "failed", "aborted")
# Targets a request must give a reason for (`legion phase --to failed --reason TEXT`); the
# CLI checks it before sending, the machine refuses it with code `reason_required`.
NEEDS_REASON: frozenset[str] = frozenset({"failed"})

# Who asks for the move: the team lead itself (`legion phase`), its parent (a retire or a
# parent decision), or the supervisor (completion gate, all-children-failed verdict).
Actor = Literal["self", "parent", "supervisor"]

TransitionCode = Literal[
    "ok",
    "terminal",  # the team already ended
    "invalid_phase",  # the current phase is not one of this machine
    "invalid_transition",  # the target is not a declared next phase
    "conditions_unmet",  # declared, but a required condition does not hold
    "reason_required",  # `failed` without a reason
    "reserved",  # `done` / `aborted` belong to someone else
]


@dataclass(frozen=True, slots=True)
class Edge:
    """The extra rules of one `phase → to` move (beyond the phase-level `require`)."""

    to: str
    require: tuple[Condition, ...] = ()
    rework: bool = False  # taking this edge spends one rework (rework_count += 1)


@dataclass(frozen=True, slots=True)
class PhaseSpec:
    id: str
    require: tuple[Condition, ...] = ()
    next: tuple[str, ...] = ()
    timeout_ms: int | None = None
    # Per-edge extras for names in `next`; a name in `next` without an entry here is a plain
    # edge. Kept separate so `PhaseSpec(id, require, next, timeout_ms)` stays the v5 shape.
    edges: tuple[Edge, ...] = ()

    def edge(self, to: str) -> Edge | None:
        """The edge to `to`, or None when `to` is not a declared next phase."""
        if to not in self.next:
            return None
        for edge in self.edges:
            if edge.to == to:
                return edge
        return Edge(to)

    def exit_requires(self, to: str) -> tuple[Condition, ...]:
        edge = self.edge(to)
        return self.require + (edge.require if edge else ())


@dataclass(frozen=True, slots=True)
class TransitionResult:
    allowed: bool
    current: str
    target: str
    code: TransitionCode
    message: str
    legal_next: tuple[str, ...] = ()
    unmet: tuple[Condition, ...] = ()
    rework: bool = False  # the caller must add one to rework_count
    forced: bool = False  # a parent retire landed although the phase was unresolvable

    def __bool__(self) -> bool:
        return self.allowed


@dataclass(frozen=True, slots=True)
class Machine:
    """One team's workflow. `start` is the declared start or else the first phase."""

    phases: tuple[PhaseSpec, ...]
    start: str = ""
    max_rework: int = DEFAULT_MAX_REWORK
    _by_id: dict[str, PhaseSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.start and self.phases:
            object.__setattr__(self, "start", self.phases[0].id)
        object.__setattr__(self, "_by_id", {p.id: p for p in self.phases})

    # ----- lookup ------------------------------------------------------------------------
    def phase(self, phase_id: str) -> PhaseSpec | None:
        return self._by_id.get(phase_id)

    @property
    def phase_ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.phases)

    def timeout_ms(self, phase_id: str) -> int | None:
        spec = self.phase(phase_id)
        return spec.timeout_ms if spec else None

    def verification_phase(self) -> str | None:
        """The phase whose exit to `done` completes the team (upstream #358 completion gate).

        A phase with a `→ done` edge, preferring one whose exit requires
        `verification_passed`, else the LAST declared candidate (declaration order is
        pipeline order). None when no phase exits to `done`: the caller keeps `verifying`.
        """
        candidates = [p for p in self.phases if "done" in p.next]
        verified = [p for p in candidates if "verification_passed" in p.exit_requires("done")]
        chosen = verified or candidates
        return chosen[-1].id if chosen else None

    # ----- judging a move ------------------------------------------------------------------
    def check_transition(
        self,
        snapshot: TeamSnapshot,
        current: str,
        target: str,
        *,
        reason: str | None = None,
        actor: Actor = "self",
    ) -> TransitionResult:
        """May the team move from `current` to `target` now? Refusals list the legal moves."""
        d = self._decide(snapshot, current, target, reason, actor)
        if d.code == "ok":
            message = d.why or f"{current} → {target}"
            return TransitionResult(
                True, current, target, "ok", message, rework=d.rework, forced=d.forced
            )
        if target == "aborted":
            # Not a phase request the team can fix by acting: no list of next phases.
            return TransitionResult(False, current, target, d.code, d.why)
        legal = self.legal_next(snapshot, current, actor=actor)
        shown = [f"{p} (with --reason)" if p == "failed" else p for p in legal]
        message = receipts.phase_refused(current, target, d.why, shown)
        return TransitionResult(False, current, target, d.code, message, legal, d.unmet)

    def legal_next(
        self, snapshot: TeamSnapshot, current: str, *, actor: Actor = "self"
    ) -> tuple[str, ...]:
        """Every phase the team could move to right now (`failed` assumes a reason is given)."""
        spec = self.phase(current)
        if spec is None:
            candidates: list[str] = []
        else:
            candidates = [*spec.next, "done", "failed"]
        candidates.append("aborted")
        legal: list[str] = []
        for target in candidates:
            # `failed` is probed with a reason: the list says what is possible, and a
            # missing reason is a fault of the request, not of the team's state.
            probe = "listing legal moves" if target == "failed" else None
            if target not in legal and self._decide(snapshot, current, target, probe, actor).ok:
                legal.append(target)
        return tuple(legal)

    # ----- JSON (stored in nodes.machine) --------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        phases: list[dict[str, Any]] = []
        for spec in self.phases:
            nexts: list[Any] = []
            for to in spec.next:
                edge = spec.edge(to)
                if edge is not None and (edge.require or edge.rework):
                    item: dict[str, Any] = {"to": to}
                    if edge.require:
                        item["require"] = list(edge.require)
                    if edge.rework:
                        item["rework"] = True
                    nexts.append(item)
                else:
                    nexts.append(to)
            entry: dict[str, Any] = {"id": spec.id, "require": list(spec.require), "next": nexts}
            if spec.timeout_ms is not None:
                entry["timeoutMs"] = spec.timeout_ms
            phases.append(entry)
        return {"start": self.start, "maxRework": self.max_rework, "phases": phases}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    # ----- internals: the one place the rules live -----------------------------------------
    def _decide(
        self, snap: TeamSnapshot, current: str, target: str, reason: str | None, actor: Actor
    ) -> _Decision:
        if target == "aborted":
            return self._decide_abort(current, actor)
        if current in TERMINALS:
            return _Decision("terminal", f"{current} is terminal; the team has ended")
        spec = self.phase(current)
        if spec is None:
            known = ", ".join(self.phase_ids)
            return _Decision(
                "invalid_phase", f"'{current}' is not a phase of this machine ({known})"
            )
        if target in NEEDS_REASON and (reason is None or not reason.strip()):
            return _Decision("reason_required", receipts.PHASE_FAILED_NEEDS_REASON)
        if target == "failed":
            return self._decide_failed(snap, spec, actor)
        if target == "done" and "done" not in spec.next:
            if actor == "self":
                return _Decision("reserved", receipts.PHASE_DONE_RESERVED)
            # The parent or supervisor may close the team once the phase's own rules hold.
            return _conditions(snap, spec.require)
        edge = spec.edge(target)
        if edge is None:
            if target in self._by_id or target in TERMINALS:
                why = f"{target} is not a declared next phase of {current}"
            else:
                why = f"'{target}' is not a phase of this machine"
            return _Decision("invalid_transition", why)
        return _conditions(snap, spec.require + edge.require, rework=edge.rework)

    def _decide_failed(self, snap: TeamSnapshot, spec: PhaseSpec, actor: Actor) -> _Decision:
        if actor != "self":
            return _Decision("ok")  # a parent decision / a supervisor verdict
        if evaluate("children_all_failed", snap) or snap.rework_count >= snap.max_rework:
            return _Decision("ok")  # upstream: all children failed, or rework exhausted
        if "failed" in spec.next:
            return _conditions(snap, spec.exit_requires("failed"))
        return _Decision(
            "invalid_transition",
            f"{spec.id} declares no failed exit, the children have not all failed and rework "
            f"is not exhausted ({snap.rework_count} of {snap.max_rework}); ask the parent",
        )

    def _decide_abort(self, current: str, actor: Actor) -> _Decision:
        if actor != "parent":
            return _Decision("reserved", receipts.PHASE_ABORT_RESERVED)
        if current == "aborted":
            return _Decision("ok", "already aborted")
        if current in TERMINALS:
            # A team that already ended keeps its verdict; the retire itself still lands.
            return _Decision("terminal", f"the team already ended in {current}; it stays {current}")
        forced = current not in self._by_id
        return _Decision("ok", f"{current} → aborted (parent retire)", forced=forced)


@dataclass(frozen=True, slots=True)
class _Decision:
    """A verdict without its message: cheap enough to probe every candidate phase."""

    code: TransitionCode
    why: str = ""
    unmet: tuple[Condition, ...] = ()
    rework: bool = False
    forced: bool = False

    @property
    def ok(self) -> bool:
        return self.code == "ok"


def _conditions(
    snap: TeamSnapshot, requires: Iterable[Condition], *, rework: bool = False
) -> _Decision:
    missing = unmet(requires, snap)
    if missing:
        why = "; ".join(explain(c, snap) for c in missing)
        return _Decision("conditions_unmet", why, missing)
    return _Decision("ok", rework=rework)
