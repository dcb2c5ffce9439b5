"""What the user asks the legion to do from the dashboard: stop, force stop, abort, steer,
resume and the palette's typed `/legion stop`, each asked to confirm where it must be,
run through the `Operations`, and answered with the receipt the user reads.

`LegionApp` is the screen: its keys and the palette call the verbs here, and the confirm
bar's answers come back here (`answered`). The operator knows the app only as a
`Surface` — where to say a receipt, where the prompts are, how to run work — so a test
drives a verb and reads what the user was told without reaching into the app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from textual.notifications import SeverityLevel

from legion_tui import receipts
from legion_tui.ops import Operations
from legion_tui.state import LegionModel, NodeView
from legion_tui.widgets.confirm import ConfirmBar, ConfirmRequest
from legion_tui.widgets.landing import LANDING_KINDS, Landing
from legion_tui.widgets.overlay.attaching import ATTACH_KINDS, Attacher
from legion_tui.widgets.overlay.message_box import MessageBox
from legion_tui.widgets.overlay.talk import SentMessage, steer_outcome
from legion_tui.widgets.palette import SlashStop
from legion_tui.wire.names import OpError

__all__ = ["Operator", "Surface"]


class Surface(Protocol):
    """The screen as the operator uses it."""

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

    def run_op(self, work: Coroutine[Any, Any, object]) -> None: ...

    def exit(self) -> None: ...


class Operator:
    """The control verbs, their confirmations and their receipts (see the module)."""

    def __init__(
        self,
        model: LegionModel,
        ops: Operations,
        surface: Surface,
        *,
        landing: Landing,
        attacher: Attacher,
    ) -> None:
        self.model = model
        self.ops = ops
        self.landing = landing  # c, L, P, D: their own confirmations, answered there
        self.attacher = attacher  # A
        self._surface = surface
        self._queued_steers: dict[str, list[str]] = {}  # steer texts sent and queued

    # ----- answers ------------------------------------------------------------------
    def answered(self, request: ConfirmRequest, confirmed: bool, choice: str | None) -> None:
        """The confirm bar's answer, to the verb that asked."""
        if request.kind in LANDING_KINDS:
            self.landing.answered(request, confirmed, choice)
            return
        if request.kind in ATTACH_KINDS:
            self.attacher.answered(request, confirmed)
            return
        if request.kind == "quit":
            if confirmed:
                self._surface.exit()
            return
        if not confirmed:
            done = "aborted" if request.kind == "abort" else "stopped"
            self._surface.say(f"Cancelled — nothing {done}.")
            return
        assert request.node_id is not None
        view = self.model.nodes.get(request.node_id)
        if view is None or not view.node.live:
            name = view.node.name if view is not None else request.node_id
            status = view.node.status.value if view is not None else "gone"
            self._surface.say(receipts.already_ended(name, status), severity="warning")
            return
        if request.kind == "abort":
            self._queued_steers.pop(view.node.id, None)  # the abort drops them
            self._surface.run_op(self.run(self.ops.abort(view.node.id)))
            return
        force = request.kind == "force-stop"
        self._surface.run_op(self.run(self.ops.stop(view.node.id, force=force)))

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

    # ----- the verbs -----------------------------------------------------------------
    def _actionable(self, node_id: str) -> NodeView | None:
        """The node a stop or abort may be asked for; else None, the user told why."""
        view = self.model.nodes.get(node_id)
        if view is None:
            return None
        node = view.node
        if node.role == "root":  # the session itself: a stop would only be refused
            self._surface.say(receipts.root_not_stoppable(node.name))
            return None
        if not node.live:
            self._surface.say(receipts.already_ended(node.name, node.status.value))
            return None
        return view

    def stop(self, node_id: str, force: bool = False) -> None:
        """`x` (`X`: force): asks first, naming what the stop ends."""
        view = self._actionable(node_id)
        if view is None:
            return
        node = view.node
        members = [v.node for v, _depth in self.model.walk(node.id)]
        prompt = receipts.stop_confirm(
            node.name,
            node.role,
            node.pid,
            force=force,
            members=len(members),
            live=sum(1 for m in members if m.live),
        )
        # The id is locked now: later re-sorts cannot redirect the answer.
        self._surface.ask(ConfirmRequest("force-stop" if force else "stop", node.id, prompt))

    def abort(self, node_id: str) -> None:
        view = self._actionable(node_id)
        if view is None:
            return
        # The steering this dashboard queued that the agent's session has not shown yet:
        # the abort drops it, so the prompt names it.
        delivered = set(view.progress.recent_user_texts)
        queued = [t for t in self._queued_steers.get(node_id, []) if t not in delivered]
        name = view.node.name
        self._surface.ask(ConfirmRequest("abort", node_id, receipts.abort_confirm(name, queued)))

    async def steer(self, box: MessageBox, node_id: str, text: str) -> None:
        """Send one message (a steer, or a follow-up to an idle agent: the same
        operation) and show the agent's receipt under the box, then follow it."""
        view = self.model.nodes.get(node_id)
        name = view.node.name if view is not None else node_id
        box.show_sent(SentMessage(node_id, name, text), view)

        def refused(said: str) -> None:
            box.show_sent(SentMessage(node_id, name, text, refused=said), view)

        receipt = await self.run(self.ops.steer(node_id, text), refused)
        if receipt is None:
            return
        outcome = steer_outcome(name, receipt)
        box.show_sent(SentMessage(node_id, name, text, outcome), self.model.nodes.get(node_id))
        if outcome == "queued":
            self._queued_steers.setdefault(node_id, []).append(text)

    def follow_receipt(self, dirty: frozenset[str]) -> None:
        """The receipt under the box on top follows its agent (queued → delivered)."""
        prompts = self._surface.prompts()
        sent = None if prompts is None else prompts[1].sent
        if prompts is not None and sent is not None and sent.node_id in dirty:
            prompts[1].follow(self.model.nodes.get(sent.node_id))

    def resume(self, node_id: str) -> None:
        view = self.model.nodes.get(node_id)
        if view is None:
            return
        if not view.interrupted:
            self._surface.say(f"{view.node.name} was not interrupted — nothing to resume.")
            return
        self._surface.run_op(self.run(self.ops.resume(node_id)))

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
            self._surface.run_op(self.run(self.ops.stop(node_id, force=command.force)))

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
