"""The end of an agent's unit of work in the dashboard (issue 28): `c` commit, `L` land,
`P` push (and a PR), `D` discard — each on the confirm bar, each a `y` of its own, each
calling the same `legion_tui.git` functions the CLI verbs call (`legion commit | land |
discard`), so the keys and the verbs refuse alike.

- `L` reads the plan (git, in a worker) and asks `Land BRANCH @ SHA → BASE …? y lands ·
  m mode`; `m` cycles merge → squash → rebase and asks again; when the agent left work
  uncommitted, `c` commits it first. `y` lands the sha the prompt named. Once landed,
  removing the worktree and branch is offered.
- `c` asks with the message made from the task and the verdict; `e` edits it.
- `P` pushes the agent's branch to the user's remote and opens a PR where `gh`/`glab` is
  logged in; the receipt is the URL the tool printed, or what the remote said.
- `D` names what would be lost (commits in no other branch, uncommitted files) and `y`
  accepts exactly that loss; anything else is refused by `cleanup.discard`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from legion_tui.git.cleanup import Loss, discard, human_size, loss_of, size_on_disk
from legion_tui.git.land import LandPlan, checkout_of, land, plan_land
from legion_tui.git.process import GitRefused, git
from legion_tui.git.share import (
    commit_message,
    commit_work,
    push_for_review,
    remote_of,
    uncommitted,
)
from legion_tui.git.worktree import Worktree, on_disk
from legion_tui.ops import Operations
from legion_tui.receipts import plural
from legion_tui.settings import LAND_MODES, LandMode
from legion_tui.state import LegionModel
from legion_tui.widgets.confirm import ConfirmKind, ConfirmRequest

LANDING_KINDS: tuple[ConfirmKind, ...] = ("land", "commit", "push", "discard")
FILES_NAMED = 2  # in the confirm line; the rest are counted
__all__ = ["LANDING_KINDS", "Landing", "land_prompt", "next_mode"]

CANCELLED = {"land": "landed", "commit": "committed", "push": "pushed", "discard": "discarded"}


def next_mode(mode: LandMode) -> LandMode:
    """merge → squash → rebase → merge: what `m` on the land prompt offers next."""
    return LAND_MODES[(LAND_MODES.index(mode) + 1) % len(LAND_MODES)]


def _files(plan: LandPlan) -> str:
    named = ", ".join(
        f"{f.path} +{f.added} -{f.removed}" if f.added is not None else f.path
        for f in plan.files[:FILES_NAMED]
    )
    more = len(plan.files) - FILES_NAMED
    return named + (f" +{more} more" if more > 0 else "")


def land_prompt(plan: LandPlan) -> str:
    """`Land BRANCH @ SHA → BASE? y lands · m … · any other key cancels · N commits: files ·
    what it does` — the question and its keys first, as the stop prompt asks, so a narrow
    bar cuts the details, never the `y`."""
    commits = plural(len(plan.commits), "commit")
    others = "/".join(m for m in LAND_MODES if m != plan.mode)
    keys = f"y lands · m {others}"
    if plan.left_behind:
        keys += " · c commits its uncommitted work first"
    prompt = (
        f"Land {plan.branch} @ {plan.short} → {plan.base}? {keys} · any other key cancels · "
        f"{commits}: {_files(plan)} · {plan.effect()}"
    )
    for warning in plan.warnings:
        prompt += f" · ⚠ {warning}"
    return prompt


@dataclass(frozen=True, slots=True)
class _Pending:
    tree: Worktree
    plan: LandPlan | None = None  # land: what `y` lands
    message: str = ""  # commit: the message `y` commits with
    loss: Loss | None = None  # discard: what `y` accepts to lose
    then_land: LandMode | None = None  # commit asked from the land prompt: land after it
    # discard of several (a fan-out's other attempts): each worktree with its own loss
    many: tuple[tuple[Worktree, Loss | None], ...] = ()


Say = Callable[[str, bool], None]  # (text, is_error)


class Landing:
    def __init__(
        self,
        model: LegionModel,
        ops: Operations,
        *,
        say: Say,
        ask: Callable[[ConfirmRequest], None],
        run: Callable[[Coroutine[Any, Any, None]], object],
        edit: Callable[[str, str, Callable[[str | None], None]], None] | None = None,
        mode: Callable[[], LandMode] = lambda: "merge",
    ) -> None:
        self._model = model
        self._ops = ops
        self._say = say
        self._ask = ask
        self._run = run
        self._edit = edit  # (branch, message, done): the commit message editor
        self._mode = mode  # `[land] mode`: the first mode the land prompt offers
        self._pending: dict[str, _Pending] = {}  # node id → what its open confirm acts on

    # ----- the keys -------------------------------------------------------------------
    def _tree_of(self, node_id: str, verb: str) -> Worktree | None:
        """The worktree `node_id` holds and may act on, else a refusal said and None."""
        view = self._model.nodes.get(node_id)
        if view is None:
            return None
        node = view.node
        space = self._ops.workspace(node_id)
        if space is None:
            self._say(
                f"{node.name} works in the project itself: it has no branch to {verb}.", False
            )
            return None
        if space.owner_id != node_id:
            owner = self._model.nodes.get(space.owner_id)
            lead = owner.node.name if owner is not None else space.owner_id
            self._say(f"{node.name} works in {lead}'s worktree: {verb} {lead}.", False)
            return None
        if node.live:
            status = node.status.value
            self._say(f"{node.name} is still {status}: {verb} it once it has settled.", False)
            return None
        # A lead's members work in its worktree: not while one of them is still at it
        # (`legion land` refuses alike).
        busy = next((v.node for v, _depth in self._model.walk(node_id) if v.node.live), None)
        if busy is not None:
            self._say(
                f"{busy.name} still works in {node.name}'s worktree ({busy.status.value}): "
                f"{verb} {node.name} once it has settled.",
                False,
            )
            return None
        return space.tree

    def start(self, node_id: str) -> None:
        """`L`: refuse at once what cannot be landed, else read the plan and ask."""
        tree = self._tree_of(node_id, "land")
        if tree is not None:
            self._run(self._plan(node_id, tree, self._mode()))

    def start_commit(self, node_id: str) -> None:
        """`c`: commit what the agent left uncommitted in its worktree."""
        tree = self._tree_of(node_id, "commit")
        if tree is not None:
            self._run(self._ask_commit(node_id, tree, None, None))

    def start_push(self, node_id: str) -> None:
        """`P`: push the agent's branch to the user's remote (and open a PR)."""
        tree = self._tree_of(node_id, "push")
        if tree is not None:
            self._run(self._ask_push(node_id, tree))

    def start_discard(self, node_id: str) -> None:
        """`D`: remove an ended agent's worktree and branch."""
        tree = self._tree_of(node_id, "discard")
        if tree is not None:
            self._run(self._ask_discard(node_id, tree, landed=False))

    def start_discard_others(self, key: str, keep: str, others: Sequence[str]) -> None:
        """The compare view's `D`: the attempts of a fan-out other than `keep`, in one
        confirm that names each one's loss (`key`: the group's row, whose confirm it is)."""
        trees = [(node_id, self._tree_of(node_id, "discard")) for node_id in others]
        if any(tree is None for _id, tree in trees) or not trees:
            return  # `_tree_of` said why (still working, no worktree of its own)
        keep_view = self._model.nodes.get(keep)
        kept = keep_view.node.name if keep_view is not None else keep
        self._run(self._ask_discard_many(key, kept, [t for _i, t in trees if t is not None]))

    async def _ask_discard_many(self, key: str, kept: str, trees: list[Worktree]) -> None:
        many: list[tuple[Worktree, Loss | None]] = []
        said: list[str] = []
        try:
            for tree in trees:
                checkout = await checkout_of(tree)
                loss = await loss_of(checkout, tree.branch, on_disk(tree))
                many.append((tree, loss))
                size = human_size(size_on_disk(on_disk(tree)))
                said.append(f"{tree.branch} ({size}" + (
                    f", LOSING {loss.says()})" if loss else ", nothing only there)"))
        except GitRefused as err:
            self._say(err.message, True)
            return
        losing = sum(1 for _tree, loss in many if loss)
        head = f"Discard the {plural(len(many), 'other attempt')}, keeping {kept}"
        head += f", {losing} of them LOSING work" if losing else ""
        prompt = (f"{head}? y removes their worktrees and branches · any other key keeps "
                  f"them · {' · '.join(said)}")  # fmt: skip
        self._pending[key] = _Pending(trees[0], many=tuple(many))
        self._ask(ConfirmRequest("discard", key, prompt))

    # ----- the questions --------------------------------------------------------------
    async def _plan(self, node_id: str, tree: Worktree, mode: LandMode) -> None:
        try:
            plan = await plan_land(tree, mode)
        except GitRefused as err:
            self._say(err.message, True)
            return
        self._pending[node_id] = _Pending(tree, plan=plan)
        choices = ("m", "c") if plan.left_behind else ("m",)
        self._ask(ConfirmRequest("land", node_id, land_prompt(plan), choices))

    async def _ask_commit(
        self, node_id: str, tree: Worktree, message: str | None, then_land: LandMode | None
    ) -> None:
        view = self._model.nodes.get(node_id)
        if view is None:
            return
        try:
            status = await uncommitted(tree)
        except GitRefused as err:
            self._say(err.message, True)
            return
        if not status:
            self._say(f"{tree.branch} has no uncommitted work: nothing to commit.", False)
            return
        message = message or commit_message(view.node.task, view.node.verdict_data)
        subject = message.strip().splitlines()[0]
        count = plural(len(status), "file")
        prompt = (
            f"Commit {count} in {tree.branch}? y commits · e edits the message · any other "
            f"key cancels · “{subject}”"
        )
        self._pending[node_id] = _Pending(tree, message=message, then_land=then_land)
        self._ask(ConfirmRequest("commit", node_id, prompt, ("e",) if self._edit else ()))

    async def _ask_push(self, node_id: str, tree: Worktree) -> None:
        try:
            checkout = await checkout_of(tree)
            remote = await remote_of(checkout, tree.branch)
            head = (await git(checkout, "rev-parse", "--short", tree.branch)).strip()
        except GitRefused as err:
            self._say(err.message, True)
            return
        if remote is None:
            self._say(f"{checkout} has no remote: nothing to push {tree.branch} to.", False)
            return
        forge = next((tool for tool in ("gh", "glab") if shutil.which(tool)), None)
        pr = f" and open a PR ({forge})" if forge else ""
        prompt = (
            f"Push {tree.branch} @ {head} → {remote[0]}/{remote[1]}{pr}? y pushes · any other "
            "key cancels"
        )
        self._pending[node_id] = _Pending(tree)
        self._ask(ConfirmRequest("push", node_id, prompt))

    async def _ask_discard(self, node_id: str, tree: Worktree, *, landed: bool) -> None:
        try:
            checkout = await checkout_of(tree)
            loss = await loss_of(checkout, tree.branch, on_disk(tree))
        except GitRefused as err:
            self._say(err.message, True)
            return
        size = human_size(size_on_disk(on_disk(tree)))
        what = f"Remove {tree.branch}'s worktree ({size}) and branch"
        if loss:
            prompt = (
                f"{what}, LOSING {loss.counts()}? y discards that · any other key keeps "
                f"it · it loses {loss.says()}"
            )
        else:
            done = "now that it landed" if landed else "(nothing in it exists only there)"
            prompt = f"{what} {done}? y removes them · any other key keeps them"
        self._pending[node_id] = _Pending(tree, loss=loss)
        self._ask(ConfirmRequest("discard", node_id, prompt))

    # ----- the answers ----------------------------------------------------------------
    def answered(self, request: ConfirmRequest, confirmed: bool, choice: str | None = None) -> None:
        node_id = request.node_id or ""
        pending = self._pending.pop(node_id, None)
        if pending is None:
            return
        if choice == "m" and pending.plan is not None:
            self._run(self._plan(node_id, pending.tree, next_mode(pending.plan.mode)))
        elif choice == "c" and pending.plan is not None:
            self._run(self._ask_commit(node_id, pending.tree, None, pending.plan.mode))
        elif choice == "e" and self._edit is not None:
            self._edit(
                pending.tree.branch,
                pending.message,
                lambda text: self._edited(node_id, pending, text),
            )
        elif not confirmed:
            self._say(f"Cancelled — nothing {CANCELLED.get(request.kind, 'done')}.", False)
        elif request.kind == "land" and pending.plan is not None:
            self._run(self._land(node_id, pending.tree, pending.plan))
        elif request.kind == "commit":
            self._run(self._commit(node_id, pending))
        elif request.kind == "push":
            self._run(self._push(node_id, pending.tree))
        elif request.kind == "discard" and pending.many:
            self._run(self._discard_each(pending.many))
        elif request.kind == "discard":
            self._run(self._discard(pending.tree, pending.loss))

    def _edited(self, node_id: str, pending: _Pending, text: str | None) -> None:
        message = text or pending.message
        self._run(self._ask_commit(node_id, pending.tree, message, pending.then_land))

    async def _land(self, node_id: str, tree: Worktree, plan: LandPlan) -> None:
        try:
            landed = await land(tree, plan)
        except GitRefused as err:
            self._say(err.message, True)
            return
        self._say(landed.text, landed.stash_kept is not None)
        await self._ask_discard(node_id, tree, landed=True)

    async def _commit(self, node_id: str, pending: _Pending) -> None:
        try:
            self._say(await commit_work(pending.tree, pending.message), False)
        except GitRefused as err:
            self._say(err.message, True)
            return
        if pending.then_land is not None:
            await self._plan(node_id, pending.tree, pending.then_land)

    async def _push(self, node_id: str, tree: Worktree) -> None:
        view = self._model.nodes.get(node_id)
        try:
            checkout = await checkout_of(tree)
            remote = await remote_of(checkout, tree.branch)
            if remote is None:
                raise GitRefused(f"{checkout} has no remote any more; nothing was pushed")
            base = await git(checkout, "symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1))
            pushed, url = await push_for_review(
                checkout,
                tree.branch,
                remote,
                base.strip() or "main",
                view.node.task if view is not None else "",
                view.node.verdict_data if view is not None else None,
            )
        except GitRefused as err:
            self._say(err.message, True)
            return
        said = f"Pushed {tree.branch} → {pushed.remote}/{pushed.ref}."
        if url is not None:
            said += f" PR: {url}"
        elif pushed.said:
            said += f"\n{pushed.said}"
        self._say(said, False)

    async def _discard_each(self, many: Sequence[tuple[Worktree, Loss | None]]) -> None:
        """One after the other: git's locks are not made for two `worktree remove` (or
        `branch -D`) at once in one repository."""
        for tree, loss in many:
            await self._discard(tree, loss)

    async def _discard(self, tree: Worktree, loss: Loss | None) -> None:
        try:
            checkout = await checkout_of(tree)
            self._say(await discard(checkout, tree.branch, on_disk(tree), accept=loss), False)
        except GitRefused as err:
            self._say(err.message, True)
