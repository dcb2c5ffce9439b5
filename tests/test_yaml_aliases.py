"""Billion laughs: YAML aliases are refused in role cards and phase machines (issue 14
item 13). 342 bytes of nested anchors expand to 9⁹ strings once constructed — before,
a 447-byte card took 14 s and 1.25 GB to report (its error repr'd the expanded value).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from legion_tui.agents.cards import load_cards
from legion_tui.phases import MachineError, load_machine_file

pytestmark = pytest.mark.unit


def _laughs(key: str = "x") -> str:
    text = f'{key}0: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    previous = "a"
    for level, anchor in enumerate("bcdefghi", start=1):
        refs = ", ".join([f"*{previous}"] * 9)
        text += f"{key}{level}: &{anchor} [{refs}]\n"
        previous = anchor
    return text


def test_a_card_with_aliases_is_refused_at_once_with_a_short_message(tmp_path: Path) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    front = "name: worker\ndescription: d\nkind: sim\nrole: worker\n" + _laughs()
    (agents / "worker.md").write_text(f"---\n{front}---\nBody.\n", encoding="utf-8")
    cards = load_cards(tmp_path)
    (problem,) = cards.problems
    text = str(problem)
    assert text.startswith(".legion/agents/worker.md:6: bad YAML: aliases"), text
    assert len(text) < 400, text
    assert [c for c in cards if c.name == "worker"] == []  # refused, not half-read


def test_a_phase_machine_with_aliases_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.yml"
    path.write_text(_laughs("extra") + "phases:\n  - name: a\n", encoding="utf-8")
    with pytest.raises(MachineError) as refused:
        load_machine_file(path)
    text = str(refused.value)
    assert "aliases (&anchor / *alias) are not allowed" in text and len(text) < 600, text


def test_yaml_without_aliases_loads_as_before(tmp_path: Path) -> None:
    agents = tmp_path / ".legion" / "agents"
    agents.mkdir(parents=True)
    (agents / "worker.md").write_text(
        "---\nname: worker\ndescription: d\nkind: sim\nrole: worker\ntools: [read, bash]\n"
        "---\nBody.\n",
        encoding="utf-8",
    )
    cards = load_cards(tmp_path)
    assert list(cards.problems) == []
    assert [c.tools for c in cards if c.name == "worker"] == [("read", "bash")]
