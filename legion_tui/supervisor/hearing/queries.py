"""Read-only questions about the legion: wait, collect, status, tree, summaries.

Nothing here changes a node; `collect` writes only the output file it is asked for.
The live facts it answers with (a session polled once more, a worktree's delivery,
whether a turn runs now, the change signal) come from the parts that own them.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from legion_tui import receipts
from legion_tui.model import LIVE_STATUSES, EventType
from legion_tui.session.progress import SessionProgress
from legion_tui.supervisor.hearing.notices import Claim
from legion_tui.supervisor.hearing.results import write_output
from legion_tui.timeouts import within
from legion_tui.wire.names import ROOT_ID

if TYPE_CHECKING:
    from legion_tui.model_records import Node, Verdict
    from legion_tui.runs.folder import RunInfo
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.hearing.notices import Notices
    from legion_tui.supervisor.state.progress_watch import ProgressWatch
    from legion_tui.supervisor.teams.teams import Teams

__all__ = ["Queries", "output_file", "verdict_of"]

log = logging.getLogger(__name__)

_LIVE = frozenset(s.value for s in LIVE_STATUSES)


def _clock_time(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def _reported(claim: Claim) -> dict[str, Any]:
    """How an ending already reached the caller, for a reply that says so."""
    out: dict[str, Any] = {"via": claim.via, "at": claim.at}
    if claim.message_id is not None:
        out["message_id"] = claim.message_id
    return out


def output_file(run: RunInfo, node: Node) -> Path:
    """Where a node's final text is written. Direct children of root get exactly
    `<name>.output.md`; deeper nodes are prefixed by their parents' names so two
    `worker-0`s never overwrite each other."""
    rel = node.path.split("/", 1)[1] if "/" in node.path else node.name
    return run.outputs_dir / f"{rel.replace('/', '.')}.output.md"


def verdict_of(progress: SessionProgress) -> dict[str, Any] | None:
    """The verdict the session ended with, as the object the agent wrote."""
    return None if progress.verdict is None else verdict_object(progress.verdict)


def verdict_object(verdict: Verdict) -> dict[str, Any]:
    """A verdict as the object its agent wrote (what the ledger and `collect` give)."""
    return dict(verdict.raw) if verdict.raw else {"ok": verdict.ok, "reason": verdict.reason}


class Queries:
    """The answers `legion wait/collect/status/tree` give, over the model."""

    def __init__(
        self, ctx: HostContext, teams: Teams, notices: Notices, progress: ProgressWatch
    ) -> None:
        self._ctx = ctx  # the mail service, once started
        self._model = ctx.model
        self._names = ctx.names
        self._run = ctx.run
        self._clock = ctx.clock
        # The node's freshest progress (its file polled once more).
        self._progress = progress.progress
        self._teams = teams  # a centurion's branch + HEAD, None without a worktree
        self._notices = notices  # who was told of which ending (claims), and its result

    async def wait(
        self, caller_id: str, names: Sequence[str] | None, seconds: float | None
    ) -> dict[str, Any]:
        """Wait until the named children (default: every child of the caller) are no
        longer live. A timeout never stops anything, and the reply says so. Mail for
        the caller ends the wait early (`state: "mail"`, the letters in `text`)."""
        work = self._wait(caller_id, names, seconds)
        mail = self._ctx.mail
        if mail is None:
            return await work
        from legion_tui.mail.service import race_mail

        outcome = await race_mail(mail.postman, caller_id, work)
        if isinstance(outcome, dict):
            return outcome
        result: dict[str, Any] = outcome.details()
        return result

    async def _wait(
        self, caller_id: str, names: Sequence[str] | None, seconds: float | None
    ) -> dict[str, Any]:
        caller = self._names.caller(caller_id)
        if names:
            ids = [self._names.resolve(caller_id, n).id for n in names]
        else:
            ids = list(self._model.children(caller.id))
        node = self._names.node
        deadline = None if seconds is None else time.monotonic() + max(0.0, seconds)
        while True:
            pending = [i for i in ids if node(i).live]
            if not pending:
                state = "settled"
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                state = "timeout"
                break
            changed = self._ctx.record.changed  # set, then replaced, per write
            with contextlib.suppress(TimeoutError):
                await within(changed.wait(), remaining)
        nodes = [self.summary(i) for i in ids]
        for entry, node_id in zip(nodes, ids, strict=True):
            # A wait that reports an ending to the node's parent hands it over: no notice
            # tells it again. (Anyone else asking — root looking at a member — claims
            # nothing: the parent still has to hear.)
            if entry["status"] in _LIVE or node(node_id).parent_id != caller.id:
                continue
            claim = self._notices.claimed(node_id)
            if not self._notices.claim(node_id, "wait") and claim is not None:
                entry["reported"] = _reported(claim)
        result: dict[str, Any] = {"state": state, "nodes": nodes}
        if state == "timeout":
            still = [node(i).name for i in ids if node(i).live]
            result["message"] = receipts.wait_timeout(seconds or 0.0, still)
        return result

    def summary(self, node_id: str) -> dict[str, Any]:
        node = self._names.node(node_id)
        return {
            "id": node.id,
            "name": node.name,
            "path": node.path,
            "status": node.status.value,
            "verdict": node.verdict_data,
            "error": node.error,
        }

    async def collect(self, caller_id: str, name: str, *, again: bool = False) -> dict[str, Any]:
        """The child's final text + verdict (`outputs/<name>.output.md` holds the text).

        An ended child answers its result (the finished cache, else its row and output
        file), once: a result already reported to the caller (a notice, an earlier
        collect) answers only that it was, with the verdict and the file, unless `again`."""
        target = self._names.resolve(caller_id, name)
        round_ = self._notices.round_of(target.id)
        if target.live or round_ == 0:
            return await self._collect_now(target)
        result = self._notices.result((target.id, round_))
        reply = result.reply()
        if result.delivery is None and (delivered := await self._teams.delivery_of(target.id)):
            reply["delivery"] = delivered
        # Only the parent's own collect hands the result over (root looking at a member
        # leaves the lead's notice alone). Root is never answered "already reported":
        # that guards an agent's context from the same text twice, not a person from
        # their own question.
        if target.parent_id != self._names.caller(caller_id).id:
            return reply
        claim = self._notices.claimed(target.id)
        if claim is not None and claim.via in ("notice", "collect") and not again:
            if target.parent_id != ROOT_ID:
                reply["text"] = ""
                reply["reported"] = _reported(claim)
                reply["message"] = receipts.already_reported(
                    target.name, claim.via, _clock_time(claim.at), claim.message_id
                )
            return reply
        # Handed over now (a wait only named it; `again` leaves the first claim as it is).
        self._notices.claim(target.id, "collect", over="wait")
        return reply

    async def _collect_now(self, target: Node) -> dict[str, Any]:
        """A live child (or one this host never saw end): what its session says now."""
        progress = self._progress(target.id)
        # A stored verdict that is not JSON reads as none: the session's own is next best.
        verdict = target.verdict_data
        if verdict is None:
            verdict = verdict_of(progress)
        out = self.output_file(target)
        write_output(out, progress.last_text)
        result: dict[str, Any] = {
            "name": target.name,
            "path": target.path,
            "status": target.status.value,
            "text": progress.last_text,
            "verdict": verdict,
            "output_file": str(out),
        }
        delivered = await self._teams.delivery_of(target.id)
        if delivered is not None:
            result["delivery"] = delivered
        return result

    def output_file(self, node: Node) -> Path:
        return output_file(self._run, node)

    def status(self, caller_id: str, name: str | None = None) -> dict[str, Any]:
        from legion_tui.session.live_rate import live_tok_s
        from legion_tui.supervisor.hearing.status import status_document

        caller = self._names.caller(caller_id)
        if name:
            if caller.id == ROOT_ID:
                target = self._names.resolve_any(name)
            else:
                target = self._names.resolve(caller_id, name)
            views = [self._model.nodes[target.id]]
        elif caller.id == ROOT_ID:
            views = [v for v, _ in self._model.walk(None)]
        else:
            views = [self._model.nodes[caller.id], *(v for v, _ in self._model.walk(caller.id))]
        roster = self._ctx.roster  # live, with no turn running now: idle
        now = self._clock()
        return status_document(
            self._run.run_id,
            self._model.session_name,
            [(v.node, v.progress) for v in views],
            now,
            interrupted={v.node.id for v in views if v.interrupted},
            idle={v.node.id for v in views if v.node.live and roster.between_turns(v.node.id)},
            terminal={v.node.id: v.terminal_line for v in views if v.terminal_line},
            budget_usd=self._model.budget_usd if caller.id == ROOT_ID and not name else None,
            checks={
                v.node.id: ev.data for v in views if (ev := v.last(EventType.CHECKS)) is not None
            },
            rates_now={
                v.node.id: live_tok_s(v.progress, now, streaming=v.streaming)
                for v in views if v.node.live
            },
            notes={v.node.id: v.note for v in views if v.node.live and v.note},
        )

    def tree_text(self, caller_id: str) -> str:
        from legion_tui.supervisor.hearing.status import render_tree

        caller = self._names.caller(caller_id)
        top = caller.id if caller.id != ROOT_ID else None
        walked = list(self._model.walk(top))
        rows = [(v.node, v.progress, d) for v, d in walked]
        views = [v for v, _d in walked]
        if top is not None:
            view = self._model.nodes[caller.id]
            rows = [(view.node, view.progress, 0)] + [(n, p, d + 1) for n, p, d in rows]
            views.append(view)
        # What status says a live node does, so that a member queued on the cluster is
        # not "between tool calls" here (a lead watches its team with `legion tree`).
        return render_tree(
            rows, self._clock(),
            terminal={v.node.id: v.terminal_line for v in views if v.terminal_line},
            notes={v.node.id: v.note for v in views if v.node.live and v.note},
        )  # fmt: skip

    async def wait_idle_tree(self, node_ids: Iterable[str] | None = None) -> None:
        """Until no node (or none of `node_ids` and their subtrees) is live."""
        while True:
            scope = list(node_ids) if node_ids is not None else [ROOT_ID]
            live = any(
                v.node.live
                for top in scope
                for v in [self._model.nodes[top], *(w for w, _ in self._model.walk(top))]
                if v.node.id != ROOT_ID
            )
            if not live:
                return
            await self._ctx.record.changed.wait()
