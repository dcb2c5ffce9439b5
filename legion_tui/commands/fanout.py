"""`legion run ROLE --task T --fanout N [--kinds …] [--pick best]` (issue 34 item 5): the
attempts started from the host's root, the wait for the whole group — every attempt
ended and its checks final, a failure sent back and fixed included — then the
comparison as a table, and with `--pick best` the land of the attempt whose checks pass
with the smallest change (ties: the lowest cost), through the same safe land as `legion
land`: it refuses, naming what is in the way, before it writes a byte of the user's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from legion_tui.commands.invocation import legion_command

if TYPE_CHECKING:
    from legion_tui.fanout.compare import Attempt
    from legion_tui.fanout.group import AttemptGroup
    from legion_tui.model_records import Node
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["PICKS", "fanout_requests", "group_done", "report_fanout"]

PICKS = ("best",)


def fanout_requests(
    args: argparse.Namespace, task: str, attempts: list[str | None]
) -> list[ChildRequest]:
    """One request per attempt (`kind` or `kind:model`), all of one group: `--name`'s,
    else one the host names `<role>-N`."""
    from legion_tui.wire.spawn_request import NEW_GROUP, ChildRequest, split_attempt

    group = args.name or NEW_GROUP
    requests = []
    for spec in attempts:
        kind, model = split_attempt(spec)
        requests.append(ChildRequest(args.role, task, kind=kind, model=model, group=group,
                                     budget_usd=args.budget_usd))  # fmt: skip
    return requests


def group_done(sup: Supervisor, attempt: Node) -> tuple[AttemptGroup, Awaitable[None]]:
    """The group `attempt` is of, and the wait until each of its attempts ended with its
    checks final (`attempt_result`) — a failure sent back and fixed included."""
    from legion_tui.fanout.group import attempt_result, groups_under

    parent = attempt.parent_id or ""
    group = next(g for g in groups_under(sup.model, parent) if g.name == attempt.attempt_group)
    checks = _checks_expected(sup)

    async def done() -> None:
        while True:
            changed = sup.ctx.record.changed  # taken before the look: no change is missed
            views = [sup.model.nodes[a] for a in group.attempt_ids]
            if all(attempt_result(v, checks and not v.node.simulated).done for v in views):
                return
            await changed.wait()

    return group, done()


async def report_fanout(sup: Supervisor, pick: str | None, group: AttemptGroup) -> int:
    """The tree, the comparison, and with `pick` the land of the best attempt."""
    from legion_tui.fanout.compare import best, compare, table_lines
    from legion_tui.wire.names import ROOT_ID

    expected = _checks_expected(sup)
    attempts = await compare(
        sup.model, group, sup.teams.worktree_of, sup.model.clock(),
        lambda view: expected and not view.node.simulated,
    )  # fmt: skip
    chosen = best(attempts) if pick == "best" else None
    print(sup.queries.tree_text(ROOT_ID))
    print()
    print(f"attempt group {group.name} · {len(attempts)} attempts at one task:")
    for line in table_lines(attempts, chosen.node_id if chosen else None):
        print(f"  {line}")
    print()
    if pick is None:
        return _hints(sup, attempts)
    if chosen is None:
        print(f"legion run: --pick best: no attempt of {group.name} passed "
              f"{'its checks' if expected else 'with an ok verdict'} with a change to land; "
              "nothing was landed", file=sys.stderr)  # fmt: skip
        _hints(sup, attempts)
        return 1
    return await _land(sup, chosen, attempts)


def _checks_expected(sup: Supervisor) -> bool:
    from legion_tui.settings import load_settings

    return load_settings(sup.project_dir).settings.checks.command is not None


def _hints(sup: Supervisor, attempts: list[Attempt]) -> int:
    """How to read and land each attempt by hand; exit 0 when one of them is fit."""
    session = sup.model.session_name
    for attempt in attempts:
        print(f"{attempt.name}: `{legion_command()} diff {attempt.path} --session {session}`"
              f" · `{legion_command()} land {attempt.path} --session {session}`")  # fmt: skip
    return 0 if any(a.ok for a in attempts) else 1


async def _land(sup: Supervisor, chosen: Attempt, attempts: list[Attempt]) -> int:
    """Commit what the chosen attempt left uncommitted, then land its branch in the
    user's checkout (`[land] mode`); a refusal names what is in the way."""
    from legion_tui.git.land import land, plan_land
    from legion_tui.git.process import GitRefused
    from legion_tui.git.share import commit_message, commit_work, uncommitted
    from legion_tui.settings import load_settings

    tree = sup.teams.worktree_of(chosen.node_id)
    assert tree is not None  # `best` only picks an attempt whose worktree it read
    node = sup.names.node(chosen.node_id)
    try:
        if await uncommitted(tree):
            print(await commit_work(tree, commit_message(node.task, node.verdict_data)))
        mode = load_settings(sup.project_dir).settings.land_mode
        plan = await plan_land(tree, mode)
        print(f"Landing {chosen.name} ({plan.branch} @ {plan.short}) → {plan.base}: "
              f"{plan.effect()}")  # fmt: skip
        landed = await land(tree, plan)
    except GitRefused as err:
        print(f"legion run: --pick best chose {chosen.name}, but {err.message}", file=sys.stderr)
        return 1
    print(landed.text)
    session = sup.model.session_name
    for other in attempts:
        if other.node_id != chosen.node_id and other.review is not None:
            print(f"{other.name}'s worktree stays until "
                  f"`{legion_command()} discard {other.path} --session {session}`")  # fmt: skip
    return 0
