"""Each condition of the closed vocabulary, true and false, over real snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.model import NodeStatus
from legion_tui.model_records import Node
from legion_tui.phases import (
    CONDITIONS,
    ChildFact,
    Condition,
    TeamSnapshot,
    evaluate,
    explain,
    snapshot_of,
    verdict_ok_of,
)

pytestmark = pytest.mark.unit

S = NodeStatus


def kids(*facts: tuple[str, NodeStatus] | ChildFact) -> tuple[ChildFact, ...]:
    return tuple(f if isinstance(f, ChildFact) else ChildFact(f[0], f[1]) for f in facts)


CASES: list[tuple[Condition, TeamSnapshot, bool]] = [
    ("always", TeamSnapshot(), True),
    ("contract_file", TeamSnapshot(contract_path="contract.md", contract_size=12), True),
    ("contract_file", TeamSnapshot(contract_path="contract.md", contract_size=0), False),
    ("contract_file", TeamSnapshot(contract_path="contract.md"), False),
    ("contract_file", TeamSnapshot(contract_size=12), False),
    ("children_present", TeamSnapshot(children=kids(("a", S.RUNNING))), True),
    ("children_present", TeamSnapshot(), False),
    ("children_settled", TeamSnapshot(), True),  # vacuous: nobody is still running
    (
        "children_settled",
        TeamSnapshot(children=kids(("a", S.SETTLED), ("b", S.FAILED), ("c", S.RETIRED))),
        True,
    ),
    ("children_settled", TeamSnapshot(children=kids(("a", S.SETTLED), ("b", S.BLOCKED))), False),
    ("children_settled", TeamSnapshot(children=kids(("a", S.STARTING))), False),
    ("children_none_failed", TeamSnapshot(children=kids(("a", S.SETTLED))), True),
    ("children_none_failed", TeamSnapshot(children=kids(("a", S.FAILED))), False),
    (
        "children_none_failed",
        TeamSnapshot(children=(ChildFact("a", S.FAILED, handled=True), ChildFact("b", S.SETTLED))),
        True,
    ),
    ("verdict_ok", TeamSnapshot(children=(ChildFact("r", S.SETTLED, verdict_ok=True),)), True),
    ("verdict_ok", TeamSnapshot(children=(ChildFact("r", S.RETIRED, verdict_ok=True),)), True),
    # a running child's verdict does not count yet
    ("verdict_ok", TeamSnapshot(children=(ChildFact("r", S.RUNNING, verdict_ok=True),)), False),
    ("verdict_ok", TeamSnapshot(children=(ChildFact("r", S.SETTLED, verdict_ok=False),)), False),
    ("verdict_ok", TeamSnapshot(children=(ChildFact("r", S.SETTLED),)), False),
    (
        "verdict_not_ok",
        TeamSnapshot(children=(ChildFact("r", S.SETTLED, verdict_ok=False),)),
        True,
    ),
    ("verdict_not_ok", TeamSnapshot(children=(ChildFact("r", S.SETTLED, verdict_ok=True),)), False),
    ("verification_passed", TeamSnapshot(verification="pass"), True),
    ("verification_passed", TeamSnapshot(verification="fail"), False),
    ("verification_passed", TeamSnapshot(), False),
    ("verification_failed", TeamSnapshot(verification="fail"), True),
    ("verification_failed", TeamSnapshot(verification="pass"), False),
    ("rework_available", TeamSnapshot(rework_count=1, max_rework=2), True),
    ("rework_available", TeamSnapshot(rework_count=2, max_rework=2), False),
    ("children_all_failed", TeamSnapshot(children=kids(("a", S.FAILED), ("b", S.FAILED))), True),
    ("children_all_failed", TeamSnapshot(children=kids(("a", S.FAILED), ("b", S.SETTLED))), False),
    ("children_all_failed", TeamSnapshot(), False),  # no children: nothing failed
]


@pytest.mark.parametrize(("condition", "snap", "expected"), CASES)
def test_condition_truth_table(condition: Condition, snap: TeamSnapshot, expected: bool) -> None:
    assert evaluate(condition, snap) is expected


def test_every_condition_has_a_true_and_a_false_case() -> None:
    covered = {(c, e) for c, _, e in CASES}
    for condition in CONDITIONS:
        assert (condition, True) in covered
        if condition != "always":
            assert (condition, False) in covered


def test_contract_file_reads_a_real_file_at_capture(tmp_path: Path) -> None:
    contract = tmp_path / "contract.md"
    assert not evaluate("contract_file", TeamSnapshot.capture(contract_path=contract))
    contract.write_text("")
    assert not evaluate("contract_file", TeamSnapshot.capture(contract_path=contract))
    contract.write_text("# contract\n")
    snap = TeamSnapshot.capture(contract_path=contract)
    assert evaluate("contract_file", snap)
    # The snapshot is a fact of its instant: deleting the file later does not change it.
    contract.unlink()
    assert evaluate("contract_file", snap)
    assert not evaluate("contract_file", TeamSnapshot.capture(contract_path=contract))
    assert not evaluate("contract_file", TeamSnapshot.capture())


def test_explain_names_the_blocking_children() -> None:
    snap = TeamSnapshot(children=kids(("w-0", S.RUNNING), ("w-1", S.SETTLED), ("w-2", S.FAILED)))
    assert "w-0" in explain("children_settled", snap)
    assert "w-1" not in explain("children_settled", snap)
    assert "w-2" in explain("children_none_failed", snap)
    assert "supersedes" in explain("children_none_failed", snap)
    assert "no child has been dispatched yet" in explain("children_present", TeamSnapshot())


def test_unknown_condition_raises() -> None:
    with pytest.raises(ValueError, match="unknown condition"):
        evaluate("sunny", TeamSnapshot())  # type: ignore[arg-type]


def node(node_id: str, name: str, status: NodeStatus, verdict: str | None = None) -> Node:
    return Node(
        id=node_id,
        run_id="r",
        parent_id="lead",
        name=name,
        path=f"root/lead/{name}",
        role="worker",
        kind="sim",
        backend="inprocess",
        status=status,
        verdict=verdict,
    )


def test_snapshot_from_ledger_rows(tmp_path: Path) -> None:
    lead = node("lead", "lead", S.RUNNING)
    lead.phase, lead.rework_count = "implementing", 1
    (tmp_path / "contract.md").write_text("x")
    children = [
        node("n1", "w-0", S.SETTLED, '{"ok": true, "reason": "done"}'),
        node("n2", "w-1", S.FAILED),
        node("n3", "w-2", S.SETTLED, "not json"),
        node("n4", "w-3", S.SETTLED, '{"ok": "yes"}'),
    ]
    snap = snapshot_of(
        lead, children, contract_path=tmp_path / "contract.md", handled=["n2"], verification="pass"
    )
    assert (snap.phase, snap.rework_count, snap.verification) == ("implementing", 1, "pass")
    assert [c.verdict_ok for c in snap.children] == [True, None, None, None]
    assert [c.handled for c in snap.children] == [False, True, False, False]
    assert evaluate("contract_file", snap)
    assert evaluate("children_none_failed", snap)
    assert evaluate("verdict_ok", snap)
    assert verdict_ok_of(node("x", "x", S.SETTLED, '{"ok": false}')) is False
