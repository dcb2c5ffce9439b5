"""`legion run ROLE --task T --fanout N [--kinds …] [--pick best]` (issue 34 item 5): the
attempts started from the host's root, the wait for the whole group — every attempt
ended and its checks final, a failure sent back and fixed included — then the
comparison as a table, and with `--pick best` the land of the attempt whose checks pass
with the smallest change (ties: the lowest cost), through the same safe land as `legion
land`: it refuses, naming what is in the way, before it writes a byte of the user's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from legion_tui.commands.invocation import legion_command

if TYPE_CHECKING:
    from legion_tui.fanout.compare import Attempt
    from legion_tui.fanout.group import AttemptGroup
    from legion_tui.supervisor.core import Supervisor
    from legion_tui.wire.spawn_request import ChildRequest

__all__ = ["PICKS", "run_fanout"]

PICKS = ("best",)


async def run_fanout(
    sup: Supervisor,
    args: argparse.Namespace,
    requests: list[ChildRequest],
    interrupted: asyncio.Event,
) -> int:
    from legion_tui.fanout.compare import best, compare, table_lines
    from legion_tui.fanout.group import groups_under
    from legion_tui.wire.names import ROOT_ID, OpError

    try:
        nodes = await sup.launcher.spawn(ROOT_ID, requests)
    except OpError as err:
        print(f"legion run: {err.message}", file=sys.stderr)
        return 1
    name = nodes[0].attempt_group
    group = next(g for g in groups_under(sup.model, ROOT_ID) if g.name == name)
    expected = _checks_expected(sup)
    waited = asyncio.create_task(_group_done(sup, group, expected))
    stop = asyncio.create_task(interrupted.wait())
    await asyncio.wait({waited, stop}, return_when=asyncio.FIRST_COMPLETED)
    for waiter in (waited, stop):
        waiter.cancel()
    if interrupted.is_set():
        print("legion run: interrupted — live agents paused (resume them with "
              f"`{legion_command()} tui --session {sup.model.session_name}`)",
              file=sys.stderr)  # fmt: skip
        return 1
    attempts = await compare(
        sup.model, group, sup.teams.worktree_of, sup.model.clock(),
        lambda view: expected and not view.node.simulated,
    )  # fmt: skip
    chosen = best(attempts) if args.pick == "best" else None
    print(sup.queries.tree_text(ROOT_ID))
    print()
    print(f"attempt group {group.name} · {len(attempts)} attempts at one task:")
    for line in table_lines(attempts, chosen.node_id if chosen else None):
        print(f"  {line}")
    print()
    if args.pick is None:
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


async def _group_done(sup: Supervisor, group: AttemptGroup, checks: bool) -> None:
    """Until every attempt ended with its checks final (`attempt_result`)."""
    from legion_tui.fanout.group import attempt_result

    while True:
        changed = sup.ctx.record.changed  # taken before the look: no change is missed
        views = [sup.model.nodes[a] for a in group.attempt_ids]
        if all(attempt_result(v, checks and not v.node.simulated).done for v in views):
            return
        await changed.wait()


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
