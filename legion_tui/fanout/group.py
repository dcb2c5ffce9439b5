"""An attempt group, read from the model: its attempts, its own status and its words.

A group is not a node: its attempts are the parent's children that share
`Node.attempt_group`, and the group's status is read from theirs — working while any
works, then done, with how many passed the project's checks. The tree draws it as a row
of its own above its attempts (`row_id`), which nothing else takes for a node id (a
node id never holds a ':').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from legion_tui.model import EventType, NodeStatus
from legion_tui.state import LegionModel, NodeView

__all__ = [
    "GROUP_GLYPH",
    "AttemptGroup",
    "AttemptResult",
    "GroupState",
    "attempt_result",
    "group_of_row",
    "group_state",
    "groups_under",
    "short_name",
]

GROUP_ROW_PREFIX = "group:"
GROUP_GLYPH = "◇"


@dataclass(frozen=True, slots=True)
class AttemptGroup:
    parent_id: str
    name: str
    attempt_ids: tuple[str, ...]  # in launch order

    @property
    def row_id(self) -> str:
        return f"{GROUP_ROW_PREFIX}{self.parent_id}/{self.name}"


def groups_under(model: LegionModel, parent_id: str) -> list[AttemptGroup]:
    """The attempt groups among `parent_id`'s children, in the order their first
    attempt was launched."""
    members: dict[str, list[str]] = {}
    for child in model.children(parent_id):
        group = model.nodes[child].node.attempt_group
        if group is not None:
            members.setdefault(group, []).append(child)
    return [AttemptGroup(parent_id, name, tuple(ids)) for name, ids in members.items()]


def group_of_row(model: LegionModel, row_id: str) -> AttemptGroup | None:
    """The group a tree row id names, as the model has it now; None for a node's id."""
    if not row_id.startswith(GROUP_ROW_PREFIX):
        return None
    parent_id, _, name = row_id[len(GROUP_ROW_PREFIX):].rpartition("/")
    return next((g for g in groups_under(model, parent_id) if g.name == name), None)


def short_name(view: NodeView) -> str:
    """An attempt's name under its group's row: `claude-2` for `fix.claude-2`."""
    group, name = view.node.attempt_group, view.node.name
    if group is not None and name.startswith(group + "."):
        return name[len(group) + 1 :]
    return name


class AttemptResult(NamedTuple):
    """Where one attempt's work stands: `done` once it ended and its checks (if any ran)
    are final; `passed` whether they passed (None: none ran — its verdict rules)."""

    done: bool
    passed: bool | None
    ok: bool  # passed, or, with no checks, a verdict that says ok


def attempt_result(view: NodeView, checks_expected: bool = False) -> AttemptResult:
    """`checks_expected`: the project has checks and they run on this attempt (the host
    knows): a settle not yet followed by their first event is not done either."""
    node = view.node
    if node.live:
        return AttemptResult(False, None, False)
    settled = view.last(EventType.NODE_SETTLED)
    checks = view.last(EventType.CHECKS)
    if checks is not None and (settled is None or checks.at >= settled.at):
        state = checks.data.get("state")
        if state == "running" or (state == "fail" and not checks.data.get("exhausted")):
            # Running, or sent back: its agent is woken with the failure (a follow-up).
            return AttemptResult(node.status is not NodeStatus.SETTLED, False, False)
        return AttemptResult(True, state == "pass", state == "pass")
    if checks_expected and node.status is NodeStatus.SETTLED:
        return AttemptResult(False, None, False)
    verdict = node.verdict_data
    ok = node.status is NodeStatus.SETTLED and isinstance(verdict, dict) and (
        verdict.get("ok") is True
    )
    return AttemptResult(True, None, ok)


class GroupState(NamedTuple):
    live: bool
    text: str
    tone: str  # the row's colour class, as `rows.Activity` has it


def group_state(attempts: Sequence[NodeView]) -> GroupState:
    """The group's own status: how many attempts work, then how many passed."""
    count = len(attempts)
    head = f"{count} attempts"
    live = sum(1 for v in attempts if v.node.live)
    results = [attempt_result(v) for v in attempts]
    if live or not all(r.done for r in results):
        done = count - live
        text = f"{head} · {live} working" + (f" · {done} done" if done else "")
        return GroupState(True, text, "text")
    passed = sum(1 for r in results if r.ok)
    checked = any(r.passed is not None for r in results)
    what = "pass the checks" if checked else "say ok"
    if not passed:
        return GroupState(False, f"{head} · none {what}", "fail")
    return GroupState(False, f"{head} · ✓ {passed} of {count} {what} · Enter compares", "ok")
