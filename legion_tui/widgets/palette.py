"""Ctrl+P: `Stop NAME`, `Force stop NAME`, `Abort NAME`, `Resume NAME`, and the typed
`/legion stop [--force] [name|all]` (SPEC §7.3).

The provider only builds hits; every hit calls back into the app, which owns the
confirm bar, the operations and the receipts. Parsing of the typed form is a pure
function so it is tested without a palette.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from legion_tui.receipts import STOP_HINT_WIDE

if TYPE_CHECKING:
    from legion_tui.state import LegionModel

SLASH = "/legion stop"


@dataclass(frozen=True, slots=True)
class SlashStop:
    force: bool
    target: str | None  # None: all live agents


def parse_slash_stop(text: str) -> SlashStop | None:
    """`/legion stop [--force|-f] [name|all]` → SlashStop; anything else → None."""
    try:
        words = shlex.split(text.strip())
    except ValueError:
        return None
    if words[:2] != ["/legion", "stop"]:
        return None
    force = False
    target: str | None = None
    for word in words[2:]:
        if word in ("--force", "-f"):
            force = True
        elif target is None:
            target = None if word == "all" else word
        else:
            return None
    return SlashStop(force, target)


class PaletteVerbs(Protocol):
    """The verbs the palette offers (the dashboard's `Operator`)."""

    def stop(self, node_id: str, force: bool = False) -> None: ...

    def abort(self, node_id: str) -> None: ...

    def resume(self, node_id: str) -> None: ...

    def slash_stop(self, command: SlashStop) -> None: ...


class PaletteHost(Protocol):
    """What the provider needs from the app."""

    model: LegionModel

    @property
    def operator(self) -> PaletteVerbs: ...

    def palette_new_agent(self) -> None: ...


class LegionCommands(Provider):
    def _host(self) -> PaletteHost:
        return self.app  # type: ignore[return-value]  # LegionApp implements PaletteHost

    def _entries(self) -> list[tuple[str, Callable[[], None], str]]:
        host = self._host()
        entries: list[tuple[str, Callable[[], None], str]] = [
            ("New agent…", host.palette_new_agent, "n · role card, agent, task; under a lead")
        ]
        for view in host.model.nodes.values():
            node = view.node
            if node.role == "root":
                continue  # the session itself: stop and abort of it are refused, never offered
            if node.live:
                entries.append((f"Stop {node.name}", partial(host.operator.stop, node.id, False),
                                f"{node.path} · asks y to confirm"))
                entries.append((f"Force stop {node.name}",
                                partial(host.operator.stop, node.id, True),
                                f"{node.path} · no grace period · asks y to confirm"))
                entries.append((f"Abort {node.name}", partial(host.operator.abort, node.id),
                                f"{node.path} · interrupt the current turn, keep context · asks y"))
            if view.interrupted or view.stopped:
                why = "interrupted by the last shutdown" if view.interrupted else "stopped"
                entries.append((f"Resume {node.name}", partial(host.operator.resume, node.id),
                                f"{node.path} · {why}"))
        return entries

    async def discover(self) -> Hits:
        yield DiscoveryHit(STOP_HINT_WIDE, self._slash_help, help="type it: /legion stop worker-2")
        for text, command, help_text in self._entries():
            yield DiscoveryHit(text, command, help=help_text)

    def _slash_help(self) -> None:
        self.app.notify(f"Type {STOP_HINT_WIDE} in the palette")

    async def search(self, query: str) -> AsyncGenerator[Hit, None]:
        parsed = parse_slash_stop(query)
        if parsed is not None:
            what = parsed.target or "all live agents"
            label = f"{'Force stop' if parsed.force else 'Stop'} {what} ({query.strip()})"
            yield Hit(1.0, label, partial(self._host().operator.slash_stop, parsed), text=label)
            return
        matcher = self.matcher(query)
        for text, command, help_text in self._entries():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
