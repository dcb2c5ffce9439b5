"""The role cards a host knows: the project's and the bundled ones (read again at each
spawn: a card edited while the host runs counts from the next spawn on), which card
each node was made from (`card_of`), a card's depth cap, and the command a resumed node
relaunches with. Admission, the launch path, the teams' worktrees and continuity read
them here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from legion_tui.agents.cards import CardSet, RoleCard

if TYPE_CHECKING:
    from legion_tui.model import Kind
    from legion_tui.model_records import Node

__all__ = ["RoleCards"]


class RoleCards:
    def __init__(self, project_dir: Path) -> None:
        self._project_dir = project_dir
        self.cards = CardSet({})  # the project's and the bundled role cards, once loaded
        self.card_of: dict[str, str] = {}  # node id → role card name

    def reload(self) -> CardSet:
        """Read the role cards again (bundled + `.legion/agents/`): a card added or edited
        while the host runs counts from the next spawn on, without a restart."""
        from legion_tui.agents.cards import load_cards

        self.cards = load_cards(self._project_dir)
        return self.cards

    def card_name(self, node: Node) -> str:
        return self.card_of.get(node.id, node.role)

    def card_for(self, node: Node) -> RoleCard | None:
        """The node's role card, None when no card of that name is loaded."""
        card_name = self.card_name(node)
        return self.cards.get(card_name) if card_name in self.cards else None

    def depth_cap(self, card_name: str) -> int | None:
        """The card's maxSubagentDepth; None for a card not loaded."""
        if card_name not in self.cards:
            return None
        cap: int = self.cards.get(card_name).max_subagent_depth
        return cap

    def command_of(self, card_name: str, kind: Kind) -> list[str]:
        """The command a resumed node relaunches with: its card's, or for an `auto` card
        what `[agent]` gives that kind now (the node recorded the kind it resolved to)."""
        if card_name not in self.cards:
            return []
        card = self.cards.get(card_name)
        if card.kind != "auto":
            return list(card.command)
        from legion_tui.agents.resolve import configured_command
        from legion_tui.settings import load_settings

        return list(configured_command(load_settings(self._project_dir).settings.agent, kind))
