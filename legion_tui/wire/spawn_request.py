"""What a spawn asks for, checked on its own before admission looks at the legion: one
child of a batch as the socket op sends it (`ChildRequest.from_wire`), its task
(`check_task`), and the spawn budgets a host applies (`Budgets`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from legion_tui.costs import is_usd
from legion_tui.wire.names import OpError

__all__ = [
    "MAX_TASK_BYTES",
    "NEW_GROUP",
    "Budgets",
    "ChildRequest",
    "check_task",
    "split_attempt",
]

# `group: true` on the wire: an attempt of a fan-out whose group the host names
# (`<role>-N`). Never a valid name, so it cannot be taken for one.
NEW_GROUP = "*"


@dataclass(frozen=True, slots=True)
class Budgets:
    """SPEC §5 spawn budgets (the demo raises them)."""

    max_depth: int = 3
    max_children: int = 8  # live children per node
    max_active: int = 32  # live nodes in the run, the host's root excluded


@dataclass(slots=True)
class ChildRequest:
    """One child of a spawn batch (the socket op's `children[]` item)."""

    role: str
    task: str
    name: str | None = None
    phases: Any = None  # a file path, a list of phases or a {start?, phases} mapping
    kind: str | None = None
    worktree: bool | None = None
    isolate: bool | None = None  # run a sim as an OS process
    sim: dict[str, Any] = field(default_factory=dict)  # sim knobs: stall_seconds, fail, ...
    seed: int | None = None
    budget_usd: float | None = None  # `budgetUsd`: its subtree is stopped past it (budget)
    # One attempt of a fan-out (issue 34): the group's name, or NEW_GROUP. Each attempt
    # works in its own worktree, every one cut from `base` (set by admission, never sent).
    group: str | None = None
    base: str | None = None
    model: str | None = None  # the model this launch runs (pi, claude, codex): an attempt's

    @classmethod
    def from_wire(cls, raw: Any) -> ChildRequest:
        if not isinstance(raw, dict):
            raise OpError("BAD_REQUEST", "each child must be an object with role and task")
        role, task = raw.get("role"), raw.get("task")
        if not isinstance(role, str) or not role:
            raise OpError("BAD_REQUEST", "child.role is required (a role card name)")
        if not isinstance(task, str):
            raise OpError("BAD_REQUEST", "child.task is required (text)")
        name = raw.get("name")
        if name is not None and not isinstance(name, str):
            raise OpError("BAD_REQUEST", "child.name must be a string")
        sim = raw.get("sim") or {}
        if not isinstance(sim, dict):
            raise OpError("BAD_REQUEST", "child.sim must be an object")
        seed = raw.get("seed")
        budget = raw.get("budgetUsd")
        if budget is not None and not is_usd(budget):
            raise OpError(
                "BAD_REQUEST", f"child.budgetUsd must be an amount of dollars > 0, got {budget!r}"
            )
        model = raw.get("model")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise OpError("BAD_REQUEST", "child.model must be a model's name")
        group = raw.get("group")
        if group is True:
            group = NEW_GROUP
        elif group is not None and (not isinstance(group, str) or group == NEW_GROUP):
            raise OpError("BAD_REQUEST", "child.group must be a name, or true for a new one")
        return cls(
            role=role,
            task=task,
            name=name,
            phases=raw.get("phases"),
            kind=raw.get("kind"),
            worktree=raw.get("worktree"),
            isolate=raw.get("isolate"),
            sim=sim,
            seed=int(seed) if isinstance(seed, int) else None,
            budget_usd=None if budget is None else float(budget),
            group=group,
            model=model,
        )


def split_attempt(spec: str | None) -> tuple[str | None, str | None]:
    """An attempt as `--kinds` and the form's Attempts write it: `pi`, or `pi:MODEL`
    (one kind with several models); (kind, model)."""
    if spec is None:
        return None, None
    kind, _, model = spec.partition(":")
    return kind.strip() or None, model.strip() or None


MAX_TASK_BYTES = 128 * 1024  # an argv word has at most 128 KiB on Linux (MAX_ARG_STRLEN)


def check_task(task: str) -> None:
    """A task every agent can be given: no NUL (no argv, no C string can carry one) and
    at most 128 KiB of UTF-8 (what one argv word may hold). Refused before any row."""
    if "\0" in task:
        raise OpError("BAD_REQUEST", "the task contains a NUL character; nothing was spawned")
    try:
        size = len(task.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise OpError("BAD_REQUEST", f"the task is not valid text ({err.reason})") from err
    if size > MAX_TASK_BYTES:
        raise OpError(
            "BAD_REQUEST",
            f"the task is {size} bytes, over {MAX_TASK_BYTES} (128 KiB): put the details "
            "in a file in the repository and point the task at it; nothing was spawned",
        )
