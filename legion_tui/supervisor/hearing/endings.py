"""What the completion notices (`notices.Notices`) need from the rest of the host: the
`Result` a node ended with — its full text written to its output file — and the letter
that tells its parent, sent on the mail path."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from legion_tui.model import EventType, MailKind
from legion_tui.model_records import Node
from legion_tui.supervisor.hearing.queries import output_file, verdict_of
from legion_tui.supervisor.hearing.results import Result, write_output

if TYPE_CHECKING:
    from legion_tui.supervisor.context import HostContext
    from legion_tui.supervisor.state.progress_watch import ProgressWatch

__all__ = ["Endings"]

log = logging.getLogger(__name__)

_ENDINGS = (EventType.NODE_SETTLED, EventType.NODE_FAILED, EventType.NODE_RETIRED)


class Endings:
    def __init__(self, ctx: HostContext, progress: ProgressWatch) -> None:
        self._ctx = ctx  # the mail service: None until the host has started
        self._model = ctx.model
        self._run = ctx.run  # its outputs folder: fixed for the run
        # The node's freshest progress (its file polled once more).
        self._progress = progress.progress

    def result_of(self, node: Node, round_: int, data: dict[str, object]) -> Result:
        """What the node ended with (this round), its full text in its output file.
        `data` is the ending event's; empty when the result is taken again later (an
        evicted entry, another host's ending): then the ledger's row, the output file
        already written and the newest ending event the model holds say it."""
        out = output_file(self._run, node)
        if not data:
            data = self._ending_data(node.id)
            if out.is_file():
                text = out.read_text(encoding="utf-8").removesuffix("\n")
            else:
                text = self._progress(node.id).last_text
                write_output(out, text)
        else:
            text = self._progress(node.id).last_text
            write_output(out, text)
        verdict = node.verdict_data
        if verdict is None:
            verdict = verdict_of(self._progress(node.id))
        delivery = data.get("delivery")
        notes = data.get("notes")
        return Result(
            node_id=node.id,
            name=node.name,
            path=node.path,
            round=round_,
            status=node.status.value,
            verdict=verdict,
            error=node.error,
            text=text,
            output_file=str(out),
            delivery=delivery if isinstance(delivery, dict) else None,
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
            text_chars=len(text),
        )

    def _ending_data(self, node_id: str) -> dict[str, object]:
        view = self._model.nodes.get(node_id)
        for event in reversed(view.events if view is not None else ()):
            if event.type in _ENDINGS:
                return dict(event.data)
        return {}

    async def send_notice(
        self, parent: str, results: Sequence[Result], subject: str, body: str
    ) -> int | None:
        """A notice is a letter (kind `notice`) from the first member to its parent: the
        mail path hands it over (an idle agent: a turn starts) and confirms it. None:
        not sent (no mail yet, or it bounced)."""
        mail = self._ctx.mail
        if mail is None:
            return None
        sent = await mail.send(
            results[0].node_id, "parent", subject, body, kind=MailKind.NOTICE.value
        )
        return None if sent["state"] == "bounced" else int(sent["message_id"])
