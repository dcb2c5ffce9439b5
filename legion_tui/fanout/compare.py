"""The attempts of a group side by side (issue 34 item 4): one `Attempt` each — kind and
model, verdict, checks, what its worktree changed against the commit they were all cut
from, tokens, cost, time — read from the model and from git (`git.review`), and the
pick of the best: the attempt whose checks pass with the smallest change (ties: the
lowest cost).

Reading changes nothing anywhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from legion_tui import receipts
from legion_tui.costs import fmt_spend, total_spend
from legion_tui.fanout.group import AttemptGroup, attempt_result, short_name
from legion_tui.git.process import GitRefused
from legion_tui.git.review import Review, review
from legion_tui.git.worktree import Worktree
from legion_tui.model import EventType
from legion_tui.receipts import fmt_duration
from legion_tui.state import LegionModel, NodeView

__all__ = ["Attempt", "best", "compare", "table_lines"]

MAX_NEW_BYTES = 4 * 1024 * 1024  # a new file past this is counted as a binary one: 0


@dataclass(frozen=True, slots=True)
class Attempt:
    node_id: str
    name: str  # by kind and number: `claude-2`
    path: str
    kind: str
    model: str | None
    status: str
    verdict: str  # `✓ fixed it`, `✗ tests red`, or `no verdict`
    checks: str  # `✓ checks`, `✗ checks after 2 retries`, or `no checks`
    ok: bool  # its checks passed (with no checks: its verdict said ok)
    done: bool
    review: Review | None  # None: no worktree to read (gone, or never made)
    problem: str | None  # why there is no review
    tokens: int
    usd: float
    cost: str  # as it is known: `~$0.012` estimated, `$0.01+?` with unpriced calls
    seconds: float

    @property
    def changed(self) -> int:
        """Lines added and removed: the size of its change (binary files count 0)."""
        if self.review is None:
            return 0
        return sum((f.added or 0) + (f.removed or 0) for f in self.review.files)

    @property
    def diffstat(self) -> str:
        if self.review is None:
            return self.problem or "no worktree"
        added = sum(f.added or 0 for f in self.review.files)
        removed = sum(f.removed or 0 for f in self.review.files)
        files = receipts.plural(len(self.review.files), "file")
        return f"+{added} -{removed} · {files}"


def _verdict(view: NodeView) -> str:
    verdict = view.node.verdict_data
    if isinstance(verdict, dict) and isinstance(verdict.get("ok"), bool):
        mark = "✓" if verdict["ok"] else "✗"
        return f"{mark} {verdict.get('reason') or ''}".rstrip()
    return view.node.error or "no verdict"


async def _review(tree: Worktree | None) -> tuple[Review | None, str | None]:
    if tree is None:
        return None, "no worktree"
    try:
        read = await review(tree)
    except GitRefused as err:
        return None, err.message
    # A new file git does not track yet has no counts from git; its lines are its change.
    files = tuple(replace(f, added=_lines(tree.path / f.path), removed=0) if f.status == "?"
                  else f for f in read.files)  # fmt: skip
    return replace(read, files=files), None


def _lines(path: Path) -> int | None:
    """The lines of a new text file (None: binary, unreadable, or over MAX_NEW_BYTES)."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_NEW_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_NEW_BYTES or b"\0" in data:
        return None
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _ended_at(view: NodeView, now: float) -> float:
    """When its work ended: its last settle (a released idle process moves the row's
    `updated_at` later, not its work), else its last update; now while it works."""
    if view.node.live:
        return now
    settled = view.last(EventType.NODE_SETTLED)
    return settled.at if settled is not None else view.node.updated_at


async def compare(
    model: LegionModel,
    group: AttemptGroup,
    worktree_of: Callable[[str], Worktree | None],
    now: float,
    checks_expected: Callable[[NodeView], bool] = lambda _view: False,
) -> list[Attempt]:
    """Each attempt of `group` as it stands now (its worktree read by git)."""
    views = [model.nodes[a] for a in group.attempt_ids]
    reviews = await asyncio.gather(*(_review(worktree_of(v.node.id)) for v in views))
    out = []
    for view, (read, problem) in zip(views, reviews, strict=True):
        result = attempt_result(view, checks_expected(view))
        checks = view.last(EventType.CHECKS)
        spend = total_spend([view.progress])
        if view.node.simulated and spend.usd:  # the demo's made-up dollars, said so
            spend = spend._replace(pretend=1)
        out.append(Attempt(
            node_id=view.node.id, name=short_name(view), path=view.node.path,
            kind=view.node.kind, model=view.progress.model, status=view.node.status.value,
            verdict=_verdict(view),
            checks=receipts.checks_words(checks.data) if checks is not None else "no checks",
            ok=result.ok, done=result.done, review=read, problem=problem,
            tokens=spend.tokens, usd=spend.usd, cost=fmt_spend(spend),
            seconds=_ended_at(view, now) - view.node.created_at,
        ))  # fmt: skip
    return out


def best(attempts: Sequence[Attempt]) -> Attempt | None:
    """The attempt to land: done, ok (its checks passed), with a change to land; the
    smallest change first, then the lowest cost, then the first launched."""
    fit = [a for a in attempts if a.done and a.ok and a.review is not None and a.review.files]
    if not fit:
        return None
    order = {a.node_id: i for i, a in enumerate(attempts)}
    return min(fit, key=lambda a: (a.changed, a.usd, order[a.node_id]))


FIELDS: tuple[tuple[str, Callable[[Attempt], str]], ...] = (
    ("kind", lambda a: ("sim (simulated)" if a.kind == "sim" else a.kind)
     + (f" · {a.model}" if a.model else "")),
    ("status", lambda a: a.status),
    ("verdict", lambda a: a.verdict),
    ("checks", lambda a: a.checks),
    ("change", lambda a: a.diffstat),
    ("commits", lambda a: "—" if a.review is None else
     str(len(a.review.commits)) + (" + uncommitted" if a.review.uncommitted else "")),
    ("tokens", lambda a: str(a.tokens)),
    ("cost", lambda a: a.cost),
    ("time", lambda a: fmt_duration(a.seconds)),
)  # fmt: skip


def table_lines(attempts: Sequence[Attempt], picked: str | None = None) -> list[str]:
    """The comparison as a plain table, one column per attempt (the CLI's); `picked`
    marks the attempt the pick chose."""
    head = [""] + [a.name + (" ★" if a.node_id == picked else "") for a in attempts]
    rows = [head] + [[label] + [value(a) for a in attempts] for label, value in FIELDS]
    rows.append(["files"] + [", ".join(f.path for f in a.review.files) if a.review else "—"
                             for a in attempts])  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]  # fmt: skip
