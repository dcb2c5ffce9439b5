"""The role cards a host knows: the project's and the bundled ones (read again at each
spawn: a card edited while the host runs counts from the next spawn on), which card
each node was made from (`card_of`), a card's depth cap, and the command a node
relaunches with (`launched_with`: the one it was first launched with, recorded in its
`node_launched` events, so a resume or an attach runs the node's own kind as it ran —
never what `[agent]` now says of another kind). Admission, the launch path, the teams'
worktrees and continuity read them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from legion_tui.agents.cards import CardSet, RoleCard

if TYPE_CHECKING:
    from legion_tui.model_records import Node
    from legion_tui.settings import AgentSettings

__all__ = ["RoleCards"]


class RoleCards:
    def __init__(self, project_dir: Path) -> None:
        self._project_dir = project_dir
        self.cards = CardSet({})  # the project's and the bundled role cards, once loaded
        self.card_of: dict[str, str] = {}  # node id → role card name
        self.launched_with: dict[str, list[str]] = {}  # node id → its launch's command

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

    def command_of(self, node: Node) -> list[str]:
        """The command the node relaunches with: the one it launched with; for a node
        launched before commands were recorded, its card's, or for an `auto` card what
        the settings give its kind now (the node recorded the kind it resolved to)."""
        recorded = self.launched_with.get(node.id)
        if recorded is not None:
            return list(recorded)
        card_name = self.card_name(node)
        if card_name not in self.cards:
            return []
        card = self.cards.get(card_name)
        if card.kind != "auto":
            return list(card.command)
        from legion_tui.agents.resolve import configured_command

        agent = self._agent_settings()
        return list(configured_command(agent, node.kind, default=agent.default == node.kind))

    def env_of(self, node: Node) -> Mapping[str, str]:
        """What the settings add to the environment of the node's agent on a relaunch:
        `[agent.KIND] env` of its own kind, for a node of an `auto` card."""
        card = self.card_for(node)
        if card is None or card.kind != "auto":
            return MappingProxyType({})
        from legion_tui.agents.resolve import configured_env

        return configured_env(self._agent_settings(), node.kind)

    def permissions_of(self, node: Node) -> str | None:
        """How the node's agent meets its permission requests: its card's `permissions:`,
        else `[agent] permissions` (read now), else None (its kind's default)."""
        card = self.card_for(node)
        if card is not None and card.permissions is not None:
            return card.permissions
        return self._agent_settings().permissions

    def _agent_settings(self) -> AgentSettings:
        from legion_tui.settings import load_settings

        return load_settings(self._project_dir).settings.agent
