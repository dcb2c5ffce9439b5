"""Transitions: what the machine allows, what it refuses, and that refusals list the way on."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui import receipts
from legion_tui.model import NodeStatus
from legion_tui.phases import (
    BUILTIN_TIMEOUTS_MS,
    DEFAULT_MACHINE,
    NEEDS_REASON,
    ChildFact,
    DeclarationRefused,
    TeamSnapshot,
    check_centurion_dispatch,
    declared_machine,
    parse_machine,
    resolve_timeout_ms,
)

pytestmark = pytest.mark.unit

S = NodeStatus
M = DEFAULT_MACHINE


def snap(*children: ChildFact, **kw: object) -> TeamSnapshot:
    return TeamSnapshot(children=children, **kw)  # type: ignore[arg-type]


def settled(name: str, ok: bool | None = None) -> ChildFact:
    return ChildFact(name, S.SETTLED, verdict_ok=ok)


def failed(name: str, handled: bool = False) -> ChildFact:
    return ChildFact(name, S.FAILED, handled=handled)


WITH_CONTRACT = {"contract_path": "contract.md", "contract_size": 40}


def test_planning_needs_the_contract_and_says_what_is_legal(tmp_path: Path) -> None:
    result = M.check_transition(
        TeamSnapshot.capture(contract_path=tmp_path / "c.md"), "planning", "implementing"
    )
    assert not result.allowed
    assert result.code == "conditions_unmet"
    assert result.unmet == ("contract_file",)
    assert result.legal_next == ()
    assert result.message.startswith("cannot move planning → implementing: contract_file:")
    assert result.message.endswith("Legal next phases from planning: none right now")

    (tmp_path / "c.md").write_text("# contract\n")
    ok = M.check_transition(
        TeamSnapshot.capture(contract_path=tmp_path / "c.md"), "planning", "implementing"
    )
    assert ok.allowed and ok.code == "ok" and not ok.rework


def test_skipping_a_phase_is_refused_listing_the_legal_next_phase() -> None:
    result = M.check_transition(snap(**WITH_CONTRACT), "planning", "reviewing")  # type: ignore[arg-type]
    assert not result.allowed
    assert result.code == "invalid_transition"
    assert result.legal_next == ("implementing",)
    assert result.message == receipts.phase_refused(
        "planning",
        "reviewing",
        "reviewing is not a declared next phase of planning",
        ["implementing"],
    )
    assert result.message.endswith("Legal next phases from planning: implementing")


def test_unknown_target_and_unknown_current() -> None:
    result = M.check_transition(snap(), "planning", "shipping")
    assert result.code == "invalid_transition" and "'shipping' is not a phase" in result.message
    result = M.check_transition(snap(), "build", "implementing")
    assert result.code == "invalid_phase" and not result.allowed


def test_implementing_waits_for_children_then_needs_one() -> None:
    running = snap(settled("w-0", True), ChildFact("w-1", S.RUNNING))
    result = M.check_transition(running, "implementing", "reviewing")
    assert result.unmet == ("children_settled",) and "w-1" in result.message
    empty = M.check_transition(snap(), "implementing", "reviewing")
    assert empty.unmet == ("children_present",)
    assert "no child has been dispatched yet" in empty.message
    assert M.check_transition(snap(settled("w-0")), "implementing", "reviewing").allowed


def test_partial_failure_is_unlocked_only_by_handling_the_failed_child() -> None:
    team = snap(settled("w-0"), failed("w-1"))
    refused = M.check_transition(team, "implementing", "reviewing")
    assert refused.unmet == ("children_none_failed",)
    assert "--supersedes" in refused.message
    handled = snap(settled("w-0"), failed("w-1", handled=True))
    assert M.check_transition(handled, "implementing", "reviewing").allowed


def test_failed_needs_a_reason_for_everyone() -> None:
    team = snap(failed("w-0"), failed("w-1"))
    for actor in ("self", "parent", "supervisor"):
        result = M.check_transition(team, "implementing", "failed", actor=actor)  # type: ignore[arg-type]
        assert not result.allowed and result.code == "reason_required"
        assert receipts.PHASE_FAILED_NEEDS_REASON in result.message
        assert "Legal next phases from implementing:" in result.message
    blank = M.check_transition(team, "implementing", "failed", reason="   ")
    assert blank.code == "reason_required"
    assert "failed" in NEEDS_REASON
    assert M.check_transition(team, "implementing", "failed", reason="all workers failed").allowed


def test_self_declared_failure_needs_a_failed_exit_or_a_dead_team() -> None:
    team = snap(settled("w-0"))
    refused = M.check_transition(team, "reviewing", "failed", reason="gave up")
    assert not refused.allowed
    assert "ask the parent" in refused.message
    # the parent may always decide it
    assert M.check_transition(team, "reviewing", "failed", reason="gave up", actor="parent")
    # rework exhausted: the team may declare its failure itself
    spent = snap(settled("w-0", False), rework_count=2)
    assert M.check_transition(spent, "reviewing", "failed", reason="review failed twice")


def test_rework_edge_spends_rework_until_exhausted() -> None:
    bad_review = snap(settled("w-0", True), settled("r-0", False))
    back = M.check_transition(bad_review, "reviewing", "implementing")
    assert back.allowed and back.rework
    spent = snap(settled("r-0", False), rework_count=2)
    refused = M.check_transition(spent, "reviewing", "implementing")
    assert refused.unmet == ("rework_available",)
    assert "failed (with --reason)" in refused.message  # the one way left


def test_verifying_to_done_through_the_declared_edge() -> None:
    passed = M.check_transition(snap(verification="pass"), "verifying", "done")
    assert passed.allowed
    refused = M.check_transition(snap(verification="fail", rework_count=0), "verifying", "done")
    assert refused.unmet == ("verification_passed",)
    assert refused.legal_next == ("implementing",)
    assert refused.message.endswith("Legal next phases from verifying: implementing")


def test_done_without_a_declared_edge_is_reserved() -> None:
    result = M.check_transition(snap(settled("w", True)), "reviewing", "done")
    assert result.code == "reserved"
    assert receipts.PHASE_DONE_RESERVED in result.message
    assert "Legal next phases from reviewing: verifying" in result.message
    # the supervisor may close it when the phase's own require holds
    assert M.check_transition(snap(), "reviewing", "done", actor="supervisor").allowed
    assert not M.check_transition(
        snap(ChildFact("w", S.RUNNING)), "implementing", "done", actor="supervisor"
    ).allowed


def test_aborted_only_for_a_parent_retire_and_always_lands() -> None:
    refused = M.check_transition(snap(), "implementing", "aborted")
    assert refused.code == "reserved" and refused.message == receipts.PHASE_ABORT_RESERVED
    landed = M.check_transition(snap(), "implementing", "aborted", actor="parent")
    assert landed.allowed and not landed.forced
    forced = M.check_transition(snap(), "build", "aborted", actor="parent")
    assert forced.allowed and forced.forced
    kept = M.check_transition(snap(), "done", "aborted", actor="parent")
    assert not kept.allowed and kept.code == "terminal"


def test_terminal_current_refuses_everything_else() -> None:
    result = M.check_transition(snap(), "done", "planning")
    assert result.code == "terminal" and result.legal_next == ()


def test_solo_machine_with_always_finishes_with_zero_children() -> None:
    solo = parse_machine(
        [
            {"id": "planning", "require": ["always"], "next": ["implementing"]},
            {"id": "implementing", "require": ["always"], "next": ["done"]},
        ]
    )
    empty = TeamSnapshot()
    assert solo.legal_next(empty, "planning") == ("implementing",)
    assert solo.check_transition(empty, "planning", "implementing").allowed
    assert solo.legal_next(empty, "implementing") == ("done",)
    assert solo.check_transition(empty, "implementing", "done").allowed
    assert solo.verification_phase() == "implementing"


def test_legal_next_for_each_actor() -> None:
    team = snap(settled("w-0", True))
    assert M.legal_next(team, "reviewing") == ("verifying",)
    assert M.legal_next(team, "reviewing", actor="parent") == (
        "verifying",
        "done",
        "failed",
        "aborted",
    )


def test_verification_phase_follows_declaration() -> None:
    assert M.verification_phase() == "verifying"
    custom = parse_machine(
        [
            {"id": "build", "next": ["ship", "done"]},
            {"id": "ship", "next": [{"to": "done", "require": ["verification_passed"]}]},
        ]
    )
    assert custom.verification_phase() == "ship"
    no_done = parse_machine([{"id": "a", "next": ["failed"]}])
    assert no_done.verification_phase() is None


def test_timeout_resolution_order() -> None:
    machine = parse_machine(
        [
            {"id": "planning", "next": ["build"], "timeoutMs": 1000},
            {"id": "build", "next": ["done"]},
        ]
    )
    assert resolve_timeout_ms("planning", machine=machine, operator={"planning": 5}) == 5
    assert resolve_timeout_ms("planning", machine=machine, operator={"planning": 0}) is None
    assert resolve_timeout_ms("planning", machine=machine, operator={}) == 1000
    assert resolve_timeout_ms("planning") == BUILTIN_TIMEOUTS_MS["planning"] == 15 * 60_000
    assert resolve_timeout_ms("implementing") == 60 * 60_000
    assert resolve_timeout_ms("reviewing") == 30 * 60_000
    assert resolve_timeout_ms("verifying") == 15 * 60_000
    assert resolve_timeout_ms("build", machine=machine) is None


def test_declaration_guards_g1_to_g4() -> None:
    with pytest.raises(DeclarationRefused) as g1:
        check_centurion_dispatch("centurion", caller_is_root=False, caller="lead", node="root/lead")
    assert str(g1.value) == receipts.centurion_root_only("lead", "root/lead")
    check_centurion_dispatch("worker", caller_is_root=False, caller="lead", node="root/lead")

    phases = [{"id": "solo", "require": ["always"], "next": ["done"]}]
    with pytest.raises(DeclarationRefused, match="declared by the root shell only; 'lead'"):
        declared_machine(phases, role="centurion", caller_is_root=False, caller="lead")
    with pytest.raises(DeclarationRefused, match="dispatch a worker for solo work"):
        declared_machine(phases, role="worker", caller_is_root=True, caller="root")
    with pytest.raises(DeclarationRefused, match="cannot reach a terminal phase from 'a'"):
        declared_machine(
            [{"id": "a", "next": ["a"]}], role="centurion", caller_is_root=True, caller="root"
        )
    machine = declared_machine(phases, role="centurion", caller_is_root=True, caller="root")
    assert machine is not None and machine.start == "solo"
    # nothing declared: the card's machine for a centurion, none otherwise
    assert (
        declared_machine(None, role="centurion", caller_is_root=True, caller="root", card_machine=M)
        is M
    )
    assert declared_machine(None, role="centurion", caller_is_root=True, caller="root") is None
