"""Completion notices: a parent hears once of each ending of its children (issue 11,
upstream notice-claim-v1).

A child's ending reaches its parent by one of two routes: the parent asks (`wait`,
`collect`), or it is told (a notice, a letter of kind `notice` through the mail path,
which starts a turn of an idle agent; for the host's root, which is the user, a toast
and the root row's line). Each ending is a *round* (the node's n-th ending), and each
round is *claimed* once, by whichever route hands it to the parent first:

- `wait` claims the rounds it reports ended, `collect` the round it returns, the stop
  receipt a parent got for its own stop, the spawn reply a launch failure;
- a notice claims its rounds at the one exit every notice passes through (`_exit`),
  right after dropping the rounds already claimed, with no await in between.

Before that exit a notice waits in one of two places, both holding rounds (never text):
the *join buffer* (members finishing together wake their lead once: it is flushed when
the parent has no live child left, or `join_seconds` after its first entry) and the
*outbox* (a parent inside a turn is told at the turn's end, when a `wait` it ran in that
turn may have claimed some of them already). The claims live here, for the host's life,
keyed by (node, round) — never on a handle or a task that ends with the agent.

A reply that claimed a round but never reached its caller (the socket closed under it)
hands the claim back (`answering`): the round goes back to the buffer and is told.
Only `collect --again` shows a claimed round a second time.
What a notice says (its subject and body) is `notice_text.py`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from legion_tui.ledger.errors import LedgerError
from legion_tui.model import ATTACHED_REASON, NodeStatus
from legion_tui.supervisor.hearing.notice_text import notice_body, notice_subject
from legion_tui.supervisor.hearing.results import FinishedResults, Result
from legion_tui.wire.names import ROOT_ID

if TYPE_CHECKING:
    from legion_tui.model_records import Node
    from legion_tui.state import LegionModel

__all__ = ["JOIN_SECONDS", "Answer", "Claim", "Handover", "Notices", "live_children"]

log = logging.getLogger(__name__)

JOIN_SECONDS = 10.0  # how long a finished member waits for its siblings (upstream: 10 s)
ENDED = (NodeStatus.SETTLED, NodeStatus.FAILED, NodeStatus.RETIRED)
# Retires that tell the parent nothing: it is being stopped itself, or the host pauses.
# (and a hand-over to the agent's own UI: its work goes on there, it is no ending)
_QUIET_RETIRES = frozenset({"parent-stop", "session-shutdown", ATTACHED_REASON})

Key = tuple[str, int]  # (node id, round)


@dataclass(frozen=True, slots=True)
class Claim:
    """Who handed a round to the parent: `notice` (message id), `wait`, `collect`,
    `stop`, `spawn`."""

    via: str
    at: float
    message_id: int | None = None


@dataclass(slots=True)
class Answer:
    """A reply under way: the claims it took (with the claim each replaced), handed
    back unless it was `sent`."""

    taken: list[tuple[Key, Claim | None]] = field(default_factory=list)
    sent: bool = False


def live_children(model: LegionModel, parent: str) -> list[str]:
    """Ids of the parent's children that are live now."""
    nodes = model.nodes
    return [c for c in model.children(parent) if c in nodes and nodes[c].node.live]


_ANSWER: ContextVar[Answer | None] = ContextVar("legion_answer", default=None)


class Handover(Protocol):
    """What an ending hands over (`endings.Endings`): the round's Result (its output file
    written), and the letter that tells the parent — its id, None when refused."""

    def result_of(self, node: Node, round_: int, data: dict[str, object]) -> Result: ...
    async def send_notice(
        self, parent: str, results: Sequence[Result], subject: str, body: str
    ) -> int | None: ...


class Notices:
    def __init__(
        self,
        model: LegionModel,
        results: FinishedResults,
        endings: Handover,
        *,
        announce: Callable[[str], None],
        busy: Callable[[str], bool],
        changed: Callable[[], None],
        join_seconds: float = JOIN_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._model = model
        self.results = results
        self._result_of = endings.result_of  # the round's Result (writes its output file)
        self._send = endings.send_notice  # a letter to the parent
        self._announce = announce  # the host's root: a toast and the root's line
        self._busy = busy  # the parent is inside a turn
        self._changed = changed  # wake whoever waits on the legion (a waiting lead)
        self.join_seconds = join_seconds
        self._clock = clock
        self._round: dict[str, int] = {}
        self._claims: dict[Key, Claim] = {}
        self._told: dict[str, str] = {}  # node id → the route that will tell its parent
        self._buffer: dict[str, list[Key]] = {}  # parent id → rounds joining
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._outbox: dict[str, list[Key]] = {}  # parent id → rounds for its turn's end
        self._leaving: dict[str, set[asyncio.Task[None]]] = {}  # parent id → exits under way
        self._closed = False
        self.handed_back = 0  # claims of replies that never reached their caller

    # ----- rounds and claims --------------------------------------------------------------
    def round_of(self, node_id: str) -> int:
        """The node's current round: how many endings this host has seen (0: none)."""
        return self._round.get(node_id, 0)

    def claimed(self, node_id: str, round_: int | None = None) -> Claim | None:
        return self._claims.get((node_id, self.round_of(node_id) if round_ is None else round_))

    def claim(
        self, node_id: str, via: str, round_: int | None = None, *, over: str | None = None
    ) -> bool:
        """Claim the node's round (default: its current one) for `via`; True when this
        call took it. `over`: a claim of that route is taken over (a `collect` hands
        over the text a `wait` only named). An ended-less node (round 0) has nothing to
        claim."""
        key = (node_id, self.round_of(node_id) if round_ is None else round_)
        before = self._claims.get(key)
        if key[1] == 0 or (before is not None and before.via != over):
            return False
        self._claims[key] = Claim(via, self._clock())
        answer = _ANSWER.get()
        if answer is not None and via in ("wait", "collect"):
            answer.taken.append((key, before))
        return True

    @contextlib.contextmanager
    def answering(self) -> Iterator[Answer]:
        """Around one socket request and its reply: the `wait`/`collect` claims made
        inside are handed back unless the reply was sent (`answer.sent = True`)."""
        answer = Answer()
        token = _ANSWER.set(answer)
        try:
            yield answer
        finally:
            _ANSWER.reset(token)
            if not answer.sent:
                for key, before in reversed(answer.taken):
                    self._hand_back(key, before)

    def _hand_back(self, key: Key, before: Claim | None) -> None:
        if before is not None:  # it had been handed over before this reply: still is
            self._claims[key] = before
            return
        claim = self._claims.pop(key, None)
        if claim is None or self._closed:
            return
        self.handed_back += 1
        view = self._model.nodes.get(key[0])
        parent = view.node.parent_id if view is not None else None
        if parent is None:
            return
        log.info("%s round %d: its reply was not delivered; it will be told", *key)
        self._join(parent, key)

    @contextlib.contextmanager
    def telling(self, node_ids: Sequence[str], route: str) -> Iterator[None]:
        """While inside, an ending of these nodes reaches their parent by `route` (the
        receipt of the parent's own stop, the reply of the spawn whose launch failed):
        it is claimed for that route, and no notice tells it again."""
        for node_id in node_ids:
            self._told[node_id] = route
        try:
            yield
        finally:
            for node_id in node_ids:
                self._told.pop(node_id, None)

    # ----- endings ------------------------------------------------------------------------
    def ended(self, node: Node, before: NodeStatus, data: dict[str, object]) -> None:
        """A status move written by the one write path: an ending (live → ended) is a new
        round, its result kept, its parent told unless told otherwise."""
        if node.status not in ENDED or before in ENDED:
            return
        round_ = self._round[node.id] = self._round.get(node.id, 0) + 1
        told = self._told.get(node.id)
        if node.status is NodeStatus.RETIRED and data.get("reason") in _QUIET_RETIRES:
            return  # a pause, or the parent's own subtree stop: nobody to tell
        try:
            self.results.put(self._result_of(node, round_, data))
        except OSError as err:  # the output file could not be written: collect retries
            log.warning("%s: its result could not be kept: %s", node.path, err)
        if told is not None:
            self.claim(node.id, told, round_)
            return
        parent = node.parent_id
        if parent is None or self._closed:
            return
        self._join(parent, (node.id, round_))

    def _join(self, parent: str, key: Key) -> None:
        if key in self._outbox.get(parent, ()):
            return  # a handed-back round still waiting for the turn's end
        entries = self._buffer.setdefault(parent, [])
        if key not in entries:  # a handed-back round never left: it is told once
            entries.append(key)
        if not live_children(self._model, parent):
            self._flush(parent)
        elif parent not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[parent] = loop.call_later(self.join_seconds, self._flush, parent)

    def _flush(self, parent: str) -> None:
        timer = self._timers.pop(parent, None)
        if timer is not None:
            timer.cancel()
        keys = self._buffer.pop(parent, [])
        if keys:
            self._start_exit(parent, keys)

    def _start_exit(self, parent: str, keys: list[Key]) -> None:
        task = asyncio.get_running_loop().create_task(self._exit(parent, keys))
        leaving = self._leaving.setdefault(parent, set())
        leaving.add(task)

        def done(_task: asyncio.Task[None]) -> None:
            leaving.discard(task)
            if not leaving:
                self._leaving.pop(parent, None)

        task.add_done_callback(done)

    # ----- the one exit --------------------------------------------------------------------
    async def _exit(self, parent: str, keys: list[Key]) -> None:
        """Every notice leaves here: the claimed rounds are dropped, a busy parent's go to
        its outbox, the rest are claimed and told — nothing awaits between the drop and
        the claim, so no `wait` can take a round this notice then tells again."""
        keys = [k for k in keys if k not in self._claims]
        if not keys or self._closed:
            self._changed()
            return
        view = self._model.nodes.get(parent)
        if view is None:
            return
        if parent != ROOT_ID and not view.node.live:
            return  # the parent ended: its `collect` still has every result
        # An exec command has no turn boundaries (it is "in a turn" while it runs): its
        # notice goes to its inbox at once, or it would wait for an end it never has.
        if parent != ROOT_ID and view.node.kind != "exec" and self._busy(parent):
            self._outbox.setdefault(parent, []).extend(keys)
            return
        try:
            results = [self.result(k) for k in keys]
        except OSError as err:  # its outputs folder went: the run folder was removed
            log.warning("the completion notice to %s was not written: %s", parent, err)
            return
        subject = notice_subject(self._model, parent, results)
        if parent == ROOT_ID:
            # The user: a toast, which claims nothing (their shell's `collect` still
            # prints the whole result); a `wait`/`collect` they ran first drops it above.
            self._announce(subject)
            return
        for key in keys:
            self._claims[key] = Claim("notice", self._clock())
        body = notice_body(self._model, parent, results)
        try:
            message_id = await self._send(parent, results, subject, body)
        except (LedgerError, OSError) as err:  # not a bug: the ledger closed or its file went
            log.warning("the completion notice to %s failed: %s", parent, err)
            message_id = None
        except Exception:
            log.exception("the completion notice to %s failed", parent)
            message_id = None
        if message_id is None:  # refused or failed: nobody was told, a later ask still is
            for key in keys:
                self._claims.pop(key, None)
            self._changed()
            return
        for key in keys:
            self._claims[key] = Claim("notice", self._clock(), message_id)

    def result(self, key: Key) -> Result:
        """The round's Result: the finished cache's, else taken again (evicted, reopened)."""
        kept = self.results.get(*key)
        if kept is not None:
            return kept
        node = self._model.nodes[key[0]].node  # evicted: taken again from the row
        return self._result_of(node, key[1], {})

    async def turn_ended(self, parent: str) -> None:
        """The parent's turn ended: what waited in its outbox goes out now (the rounds a
        `wait` of that turn took are dropped at the exit)."""
        keys = self._outbox.pop(parent, [])
        if keys:
            self._start_exit(parent, keys)
            await self.drain()

    def owed(self, parent: str) -> bool:
        """Whether a notice for the parent is still on its way (joining, in the outbox,
        or leaving): a lead waiting for its members must not settle under it."""
        waiting = self._buffer.get(parent) or self._outbox.get(parent)
        return bool(waiting or self._leaving.get(parent))

    async def drain(self) -> None:
        """Until the notices leaving now have left (or been held, or dropped)."""
        while self._leaving:
            await asyncio.gather(*(t for ts in self._leaving.values() for t in ts))

    async def close(self) -> None:
        """The host closes: nothing more is told (the parents are being paused)."""
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._buffer.clear()
        self._outbox.clear()
        exits = [task for tasks in self._leaving.values() for task in tasks]
        for task in exits:
            task.cancel()
        await asyncio.gather(*exits, return_exceptions=True)
