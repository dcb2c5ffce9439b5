"""The closed condition vocabulary of a phase machine, evaluated over a snapshot.

A condition answers "may this team leave its phase?" from facts only. Evaluation is a
pure function of a `TeamSnapshot`: the one piece of I/O (does the contract file exist and
have content?) happens when the snapshot is captured, so the same snapshot always gives
the same answer and tests need no files unless they want them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from legion_tui.model import NodeStatus
from legion_tui.model_records import Node

__all__ = [
    "CONDITIONS",
    "DEFAULT_MAX_REWORK",
    "ENDED_STATUSES",
    "ChildFact",
    "Condition",
    "TeamSnapshot",
    "Verification",
    "evaluate",
    "explain",
    "is_condition",
    "snapshot_of",
    "unmet",
    "verdict_ok_of",
]

Condition = Literal[
    "contract_file",
    "children_present",
    "children_settled",
    "children_none_failed",
    "verdict_ok",
    "verdict_not_ok",
    "verification_passed",
    "verification_failed",
    "rework_available",
    "children_all_failed",
    "always",
]
CONDITIONS: tuple[Condition, ...] = get_args(Condition)

Verification = Literal["pass", "fail"]

# upstream declarative-phase-machine-v5: "rework_count still caps at maxRework (default 2)".
DEFAULT_MAX_REWORK = 2

# A child is "terminal" for the machine once it can no longer change its mind.
ENDED_STATUSES: frozenset[NodeStatus] = frozenset(
    {NodeStatus.SETTLED, NodeStatus.FAILED, NodeStatus.RETIRED}
)
# A retired child that had settled before (a collected child) keeps its verdict, so both
# count as "settled" when a condition asks for a settled child's verdict.
_VERDICT_STATUSES: frozenset[NodeStatus] = frozenset({NodeStatus.SETTLED, NodeStatus.RETIRED})


def is_condition(name: object) -> bool:
    return isinstance(name, str) and name in CONDITIONS


@dataclass(frozen=True, slots=True)
class ChildFact:
    """What the machine needs to know about one direct child."""

    name: str
    status: NodeStatus
    verdict_ok: bool | None = None  # None: no verdict parsed from its last turn
    handled: bool = False  # a failure a settled sibling took over (`--supersedes`) or reworked


@dataclass(frozen=True, slots=True)
class TeamSnapshot:
    """The team lead and its children at one instant, as plain values."""

    status: NodeStatus = NodeStatus.RUNNING
    phase: str | None = None
    rework_count: int = 0
    max_rework: int = DEFAULT_MAX_REWORK
    verification: Verification | None = None  # the stored result of the last verification
    contract_path: str | None = None
    contract_size: int | None = None  # bytes; None when the file does not exist
    children: tuple[ChildFact, ...] = ()

    @classmethod
    def capture(
        cls,
        *,
        contract_path: str | os.PathLike[str] | None = None,
        children: Iterable[ChildFact] = (),
        status: NodeStatus = NodeStatus.RUNNING,
        phase: str | None = None,
        rework_count: int = 0,
        max_rework: int = DEFAULT_MAX_REWORK,
        verification: Verification | None = None,
    ) -> TeamSnapshot:
        """Build a snapshot, reading the contract file's size now (the only I/O)."""
        size: int | None = None
        path_text: str | None = None
        if contract_path is not None:
            path_text = os.fspath(contract_path)
            try:
                size = Path(path_text).stat().st_size
            except OSError:
                size = None
        return cls(
            status=status,
            phase=phase,
            rework_count=rework_count,
            max_rework=max_rework,
            verification=verification,
            contract_path=path_text,
            contract_size=size,
            children=tuple(children),
        )


def verdict_ok_of(node: Node) -> bool | None:
    """The `ok` of a node's stored verdict JSON; None when absent or unreadable."""
    value = node.verdict_data
    ok = value.get("ok") if isinstance(value, dict) else None
    return ok if isinstance(ok, bool) else None


def snapshot_of(
    lead: Node,
    children: Iterable[Node],
    *,
    contract_path: str | os.PathLike[str] | None = None,
    handled: Iterable[str] = (),
    verification: Verification | None = None,
    max_rework: int = DEFAULT_MAX_REWORK,
) -> TeamSnapshot:
    """A snapshot from ledger rows: the lead and its DIRECT children.

    `handled`: ids (or names) of failed children a settled sibling took over
    (`--supersedes`) or that were reworked — upstream unions both sources.
    """
    handled_set = set(handled)
    facts = [
        ChildFact(
            name=child.name,
            status=child.status,
            verdict_ok=verdict_ok_of(child),
            handled=child.id in handled_set or child.name in handled_set,
        )
        for child in children
    ]
    return TeamSnapshot.capture(
        contract_path=contract_path,
        children=facts,
        status=lead.status,
        phase=lead.phase,
        rework_count=lead.rework_count,
        max_rework=max_rework,
        verification=verification,
    )


def evaluate(condition: Condition, snap: TeamSnapshot) -> bool:
    """True when `condition` holds for `snap` (upstream v5 condition table)."""
    children = snap.children
    if condition == "always":
        return True
    if condition == "contract_file":
        return snap.contract_path is not None and (snap.contract_size or 0) > 0
    if condition == "children_present":
        return len(children) > 0
    if condition == "children_settled":
        return all(c.status in ENDED_STATUSES for c in children)
    if condition == "children_none_failed":
        return all(c.status != NodeStatus.FAILED or c.handled for c in children)
    if condition == "verdict_ok":
        return any(c.status in _VERDICT_STATUSES and c.verdict_ok is True for c in children)
    if condition == "verdict_not_ok":
        return any(c.status in _VERDICT_STATUSES and c.verdict_ok is False for c in children)
    if condition == "verification_passed":
        return snap.verification == "pass"
    if condition == "verification_failed":
        return snap.verification == "fail"
    if condition == "rework_available":
        return snap.rework_count < snap.max_rework
    if condition == "children_all_failed":
        return bool(children) and all(c.status == NodeStatus.FAILED for c in children)
    raise ValueError(f"unknown condition {condition!r}")


def unmet(conditions: Iterable[Condition], snap: TeamSnapshot) -> tuple[Condition, ...]:
    """The conditions of a conjunction that do not hold, in declaration order, no repeats."""
    seen: list[Condition] = []
    for condition in conditions:
        if condition not in seen and not evaluate(condition, snap):
            seen.append(condition)
    return tuple(seen)


def _names(children: Iterable[ChildFact], limit: int = 4) -> str:
    names = [c.name for c in children]
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def explain(condition: Condition, snap: TeamSnapshot) -> str:
    """Why `condition` does not hold right now, in words an agent can act on."""
    children = snap.children
    if condition == "contract_file":
        if snap.contract_path is None:
            return "contract_file: no contract path is set"
        return f"contract_file: {snap.contract_path} is missing or empty"
    if condition == "children_present":
        return "children_present: no child has been dispatched yet"
    if condition == "children_settled":
        live = [c for c in children if c.status not in ENDED_STATUSES]
        return f"children_settled: still running: {_names(live)}"
    if condition == "children_none_failed":
        failed = [c for c in children if c.status == NodeStatus.FAILED and not c.handled]
        return (
            f"children_none_failed: failed and not handled: {_names(failed)} "
            "(rework them, or name them in --supersedes once a settled sibling took over)"
        )
    if condition == "verdict_ok":
        return "verdict_ok: no settled child has returned ok:true"
    if condition == "verdict_not_ok":
        return "verdict_not_ok: no settled child has returned ok:false"
    if condition == "verification_passed":
        return f"verification_passed: verification is {snap.verification or 'not run yet'}"
    if condition == "verification_failed":
        return f"verification_failed: verification is {snap.verification or 'not run yet'}"
    if condition == "rework_available":
        return f"rework_available: rework used {snap.rework_count} of {snap.max_rework}"
    if condition == "children_all_failed":
        if not children:
            return "children_all_failed: the team has no children"
        ok = [c for c in children if c.status != NodeStatus.FAILED]
        return f"children_all_failed: not failed: {_names(ok)}"
    return f"{condition}: holds"
