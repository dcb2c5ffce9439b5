"""Review round 4: the phase guards (G3) ask the role a card plays, not the card's name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one

pytestmark = pytest.mark.host

LEAD_CARD = """\
---
name: lead
description: A team lead under another name.
kind: sim
role: centurion
phases:
  phases:
    - id: drafting
      require: [always]
      next: [done]
---
Lead the team.
"""
OTHER = {"phases": [{"id": "work", "require": ["always"], "next": ["done"]}]}


def _write_card(project: Path) -> None:
    agents = project / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "lead.md").write_text(textwrap.dedent(LEAD_CARD))


async def test_a_custom_centurion_card_keeps_its_phases_and_accepts_phases(
    tmp_path: Path,
) -> None:
    _write_card(tmp_path)
    async with hosted(tmp_path) as sup:
        assert "lead" in sup.ctx.cards.cards, "the card did not load"
        from_card = await spawn_one(sup, "lead", name="a", sim=dict(STUCK))
        node = sup.names.node(from_card.id)
        assert node.role == "centurion" and node.phase == "drafting" and node.machine
        # `--phases` for it is G3-legal: it is a centurion.
        inline = await spawn_one(sup, "lead", name="b", sim=dict(STUCK), phases=OTHER)
        assert sup.names.node(inline.id).phase == "work"
