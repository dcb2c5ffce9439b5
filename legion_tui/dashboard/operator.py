"""What the user asks the legion to do from the dashboard, confirmed, run, and what they
are told: stop, force stop, abort, steer, resume, the palette's typed `/legion stop`,
quit, a new agent, the end of a unit of work (c, L, P, D: `Landing`) and attach (A:
`Attacher`) — each asked to confirm where it must be, run through the `Operations`, and
answered with the receipt the user reads.

`LegionApp` is the screen: its keys and the palette call the verbs here, and the confirm
bar's answers come back here (`answered`). The operator knows the app only as a
`Surface` — where to say a receipt, where the prompts are, how to run work, how to show
a form and hand the terminal over — so a test drives a verb, answers it (`answered`) and
reads what the user was told without reaching into the app.

The verbs on one live agent that ask first (stop, force stop, abort) are a closed set of
`Verb`s: each one's kind, prompt, cancel receipt and operation live in its one record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from textual.notifications import SeverityLevel
from textual.screen import Screen

from legion_tui import receipts
from legion_tui.model import SESSION_AGENT_KINDS, NodeStatus
from legion_tui.ops import Operations
from legion_tui.settings import LandMode
from legion_tui.state import LegionModel, NodeView
from legion_tui.widgets.commit_message import CommitMessageScreen
from legion_tui.widgets.confirm import ConfirmBar, ConfirmKind, ConfirmRequest
from legion_tui.widgets.landing import LANDING_KINDS, Landing
from legion_tui.widgets.new_agent import NewAgentScreen
from legion_tui.widgets.overlay.attaching import ATTACH_KINDS, Attacher, Terminal
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import SentMessage, steer_outcome
from legion_tui.widgets.palette import SlashStop
from legion_tui.wire.names import OpError

__all__ = ["ABORT", "FORCE_STOP", "STOP", "VERBS", "Operator", "Surface", "Verb"]


class Surface(Terminal, Protocol):
    """The screen as the operator uses it (the app; `Terminal` for attach)."""

    def say(
        self,
        text: str,
        *,
        severity: SeverityLevel = "information",
        title: str = "",
        timeout: float | None = None,
    ) -> None: ...

    def prompts(self) -> tuple[ConfirmBar, MessageBox] | None: ...

    def ask(self, request: ConfirmRequest) -> None: ...

    def run_op(self, work: Coroutine[Any, Any, object], group: str = "ops") -> None: ...

    def show(self, form: Screen[str | None], done: Callable[[str | None], None]) -> None: ...

    def exit(self) -> None: ...


# (the model, the agent asked about, the steering queued for it and not yet delivered)
Prompt = Callable[[LegionModel, NodeView, list[str]], str]


@dataclass(frozen=True, slots=True)
class Verb:
    """A verb on one live agent that asks `y` first: the kind its request carries, the
    question, the word of its cancel receipt, and what `y` runs."""

    kind: ConfirmKind
    prompt: Prompt
    undone: str  # "Cancelled — nothing {undone}."
    call: Callable[[Operations, str], Awaitable[str]]
    drops_queue: bool = False  # the queued steering goes with it (the abort)


def _stop_prompt(force: bool) -> Prompt:
    def prompt(model: LegionModel, view: NodeView, _queued: list[str]) -> str:
        node = view.node
        members = [v.node for v, _depth in model.walk(node.id)]  # what the stop ends
        live = sum(1 for m in members if m.live)
        return receipts.stop_confirm(
            node.name, node.role, node.pid, force=force, members=len(members), live=live
        )

    return prompt


def _abort_prompt(_model: LegionModel, view: NodeView, queued: list[str]) -> str:
    return receipts.abort_confirm(view.node.name, queued)  # it names the steering it drops


STOP = Verb("stop", _stop_prompt(False), "stopped", lambda ops, nid: ops.act("stop", nid))
FORCE_STOP = Verb(
    "force-stop", _stop_prompt(True), "stopped", lambda ops, nid: ops.act("stop", nid, force=True)
)
ABORT = Verb("abort", _abort_prompt, "aborted", lambda ops, nid: ops.act("abort", nid), True)
VERBS: dict[ConfirmKind, Verb] = {verb.kind: verb for verb in (STOP, FORCE_STOP, ABORT)}

Answer = Callable[[ConfirmRequest, bool, str | None], None]  # (request, confirmed, choice)


def _idle_process(view: NodeView, verb: Verb) -> bool:
    """A settled agent that still holds its idle process (not released yet): `x` ends
    it — the stop retires the node and its process goes (issue 31 item 4)."""
    node = view.node
    return (
        verb.kind in ("stop", "force-stop")
        and node.status is NodeStatus.SETTLED
        and node.kind in SESSION_AGENT_KINDS
        and node.pid is not None
        and not view.released
    )


class Operator:
    """The control verbs, their confirmations and their receipts (see the module)."""

    def __init__(
        self,
        model: LegionModel,
        ops: Operations,
        surface: Surface,
        *,
        land_mode: Callable[[], LandMode] = lambda: "merge",
    ) -> None:
        self.model = model
        self.ops = ops
        self._surface = surface
        self._queued_steers: dict[str, list[str]] = {}  # steer texts sent and queued
        # c, L, P, D: their own questions, answered there. Landing's errors stay longer.
        self.landing = Landing(
            model,
            ops,
            say=lambda text, error: surface.say(
                text, severity="error" if error else "information", timeout=15 if error else None
            ),
            ask=surface.ask,
            run=lambda work: surface.run_op(work, "land"),
            edit=lambda branch, message, done: surface.show(
                CommitMessageScreen(branch, message), done
            ),
            mode=land_mode,
        )
        self.attacher = Attacher(  # A
            surface,
            ops,
            say=lambda text, error: surface.say(text, severity="error" if error else "information"),
            ask=surface.ask,
            run=lambda work: surface.run_op(work, "attach"),
        )
        # Who answers a request of each kind: one entry per kind, so no kind is guessed.
        self._answers: dict[ConfirmKind, Answer] = {
            **{kind: self.landing.answered for kind in LANDING_KINDS},
            **{kind: self._attach_answered for kind in ATTACH_KINDS},
            **{kind: self._verb_answered for kind in VERBS},
            "quit": self._quit_answered,
        }

    # ----- answers ------------------------------------------------------------------
    def answered(self, request: ConfirmRequest, confirmed: bool, choice: str | None = None) -> None:
        """The confirm bar's answer (`y`: confirmed; `choice`: one of the request's other
        keys), to the verb that asked."""
        self._answers[request.kind](request, confirmed, choice)

    def _attach_answered(self, request: ConfirmRequest, confirmed: bool, _c: str | None) -> None:
        self.attacher.answered(request, confirmed)

    def _quit_answered(self, _request: ConfirmRequest, confirmed: bool, _c: str | None) -> None:
        if confirmed:
            self._surface.exit()

    def _verb_answered(self, request: ConfirmRequest, confirmed: bool, _c: str | None) -> None:
        verb = VERBS[request.kind]
        if not confirmed:
            self._surface.say(f"Cancelled — nothing {verb.undone}.")
            return
        assert request.node_id is not None
        view = self.model.nodes.get(request.node_id)
        if view is None or not (view.node.live or _idle_process(view, verb)):
            # it ended (or was released) while the question was open
            name = view.node.name if view is not None else request.node_id
            status = view.node.status.value if view is not None else "gone"
            self._surface.say(receipts.already_ended(name, status), severity="warning")
            return
        if verb.drops_queue:
            self._queued_steers.pop(view.node.id, None)
        self._surface.run_op(self.run(verb.call(self.ops, view.node.id)))

    async def run(
        self, call: Awaitable[str], failed: Callable[[str], None] | None = None
    ) -> str | None:
        """Run an operation and show its receipt (or its failure, told to `failed` too);
        returns the receipt."""
        say = self._surface.say
        try:
            receipt = await call
        except OpError as error:
            say(error.message, title=error.code, severity="error", timeout=10)
            said = error.message
        except Exception as error:  # a failure to act is reported, never swallowed
            said = f"{type(error).__name__}: {error}"
            say(said, severity="error", timeout=10)
        else:
            say(receipt)
            return receipt
        if failed is not None:
            failed(said)
        return None

    # ----- the verbs that ask first ------------------------------------------------------
    def ask(self, verb: Verb, node_id: str) -> None:
        """Ask `verb` of `node_id` on the bar, or tell why it cannot be asked (the root,
        an agent that has ended). The id is locked now: later re-sorts cannot redirect
        the answer."""
        view = self.model.nodes.get(node_id)
        if view is None:
            return
        node = view.node
        if node.role == "root":  # the session itself: a stop would only be refused
            self._surface.say(receipts.root_not_stoppable(node.name))
            return
        if not node.live and not _idle_process(view, verb):
            self._surface.say(receipts.already_ended(node.name, node.status.value))
            return
        # The steering this dashboard queued that the agent's session has not shown yet.
        delivered = set(view.progress.recent_user_texts)
        queued = [t for t in self._queued_steers.get(node_id, []) if t not in delivered]
        self._surface.ask(ConfirmRequest(verb.kind, node_id, verb.prompt(self.model, view, queued)))

    def stop(self, node_id: str, force: bool = False) -> None:
        """`x` (`X`: force): asks first, naming what the stop ends."""
        self.ask(FORCE_STOP if force else STOP, node_id)

    def abort(self, node_id: str) -> None:
        """`a`: asks first, naming the queued steering the abort drops."""
        self.ask(ABORT, node_id)

    def quit(self, *, ask_first: bool) -> None:
        """`q`: the legion's agents are paused with the dashboard, so ask while any is live."""
        if ask_first:
            self._surface.ask(ConfirmRequest("quit", None, receipts.QUIT_CONFIRM))
        else:
            self._surface.exit()

    # ----- the verbs that run at once ------------------------------------------------
    async def steer(self, box: MessageBox, node_id: str, text: str) -> None:
        """Send one message (a steer, or a follow-up to an idle agent: the same
        operation) and show the agent's receipt under the box, then follow it."""
        view = self.model.nodes.get(node_id)
        name = view.node.name if view is not None else node_id
        box.show_sent(SentMessage(node_id, name, text), view)

        def refused(said: str) -> None:
            box.show_sent(SentMessage(node_id, name, text, refused=said), view)

        receipt = await self.run(self.ops.act("steer", node_id, text=text), refused)
        if receipt is None:
            return
        outcome = steer_outcome(name, receipt)
        box.show_sent(SentMessage(node_id, name, text, outcome), self.model.nodes.get(node_id))
        if outcome == "queued":  # an abort would drop it: its prompt will say so
            self._queued_steers.setdefault(node_id, []).append(text)

    def follow_receipt(self, dirty: frozenset[str]) -> None:
        """The receipt under the box on top follows its agent (queued → delivered)."""
        prompts = self._surface.prompts()
        sent = None if prompts is None else prompts[1].sent
        if prompts is not None and sent is not None and sent.node_id in dirty:
            prompts[1].follow(self.model.nodes.get(sent.node_id))

    def resume(self, node_id: str) -> None:
        """`r`: an agent the last shutdown interrupted, or one the user stopped mid-run."""
        view = self.model.nodes.get(node_id)
        if view is None:
            return
        if not (view.interrupted or view.stopped):
            self._surface.say(
                f"{view.node.name} was neither interrupted nor stopped mid-run — nothing to "
                "resume."
            )
            return
        self._surface.run_op(self.run(self.ops.act("resume", node_id)))

    def resume_all(self) -> None:
        """`R`: every interrupted agent, a few at a time, leads before their members."""
        if not self.model.interrupted():
            self._surface.say(receipts.nothing_interrupted())
            return
        self._surface.run_op(self.run(self.ops.act("resume", "all")))

    def slash_stop(self, command: SlashStop) -> None:
        """The typed `/legion stop [--force] [name|all]`: a command, so no second prompt."""
        if command.target is None:
            root = self.model.root_id
            targets = [c for c in self.model.children(root) if self.model.nodes[c].node.live]
            if not targets:
                self._surface.say("No live agents to stop.")
        else:
            found = self.resolve(command.target)
            if isinstance(found, str):
                self._surface.say(found, severity="error")
                return
            if found.node.role == "root":
                self._surface.say(receipts.root_not_stoppable(found.node.name), severity="warning")
                return
            targets = [found.node.id]
        for node_id in targets:
            self._surface.run_op(self.run(self.ops.act("stop", node_id, force=command.force)))

    def resolve(self, target: str) -> NodeView | str:
        """A node by path (`root/lead-api/worker-1`) or by a name that is unique; else the
        reason it cannot be named, so the wrong `worker-1` is never the one stopped."""
        by_path = [v for v in self.model.nodes.values() if v.node.path == target]
        if by_path:
            return by_path[0]
        named = [v for v in self.model.nodes.values() if v.node.name == target]
        if len(named) == 1:
            return named[0]
        if not named:
            return f"No agent named {target}."
        paths = ", ".join(v.node.path for v in named)
        return f"{target} is ambiguous: {paths} — name it by its path."

    # ----- a new agent ----------------------------------------------------------------
    def new_agent(self, target: NodeView | None, still_asked: Callable[[], bool]) -> None:
        """`n`: the form for a child of `target` when it is a live lead, else of root.
        `still_asked()` is False once the user has moved on from where `n` was pressed."""
        lead = target is not None and target.node.role == "centurion" and target.node.live
        parent = target.node.id if lead and target is not None else self.model.root_id
        if parent is not None:
            self._surface.run_op(self._open_new_agent(parent, still_asked), "new-agent")

    async def _open_new_agent(self, parent_id: str, still_asked: Callable[[], bool]) -> None:
        try:
            cards = await self.ops.role_cards()  # as on disk now: edits need no restart
        except Exception as error:  # a failure to act is reported, never swallowed
            self._surface.say(f"cannot read the role cards: {error}", severity="error", timeout=10)
            return
        if not still_asked() or parent_id not in self.model.nodes:
            return  # the user moved on while the cards were read: no form out of nowhere
        form = NewAgentScreen(
            cards,
            parent_id=parent_id,
            parent_path=self.model.nodes[parent_id].node.path,
            spawn=self.ops.spawn,
        )
        self._surface.show(form, self._new_agent_done)

    def _new_agent_done(self, receipt: str | None) -> None:
        if receipt is not None:
            self._surface.say(receipt)
