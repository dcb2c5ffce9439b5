"""The comparison of a fan-out's attempts (issue 34), as data: what each attempt's
column says, a simulated attempt said so (its dollars pretend), and the pick of the best
— the checks passed, the smallest change, then the lowest cost."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import FANOUT, NOW, canned_attempts, fanout_model

from legion_tui.fanout.compare import FIELDS, best, compare, table_lines
from legion_tui.fanout.group import group_of_row

pytestmark = pytest.mark.unit


def test_the_best_passes_its_checks_with_the_smallest_change_then_the_lowest_cost() -> None:
    pi, claude, codex = canned_attempts()
    assert best([pi, claude, codex]) is claude  # the only one whose checks passed
    passing = replace(codex, ok=True, checks="✓ checks")  # +5 -1 against claude's +4 -1
    assert best([pi, claude, passing]) is claude
    cheaper = replace(passing, review=claude.review, usd=0.01)  # the same change, cheaper
    assert best([pi, claude, cheaper]) is cheaper
    assert best([pi, replace(claude, done=False), codex]) is None  # still being checked
    assert best([replace(claude, review=None)]) is None  # nothing to land


def test_the_table_marks_the_pick_and_lists_each_attempts_files() -> None:
    lines = table_lines(canned_attempts(), picked="a2")
    assert lines[0].split() == ["pi-1", "claude-2", "★", "codex-3"]
    assert [line.split()[0] for line in lines[1:]] == [*(label for label, _ in FIELDS), "files"]
    assert lines[-1].split() == ["files", "app/login.py", "app/login.py",
                                 "app/login.py,", "tests/test_login.py"]  # fmt: skip


async def test_a_simulated_attempt_is_said_simulated_and_its_dollars_pretend() -> None:
    model = fanout_model()
    model.upsert(replace(model.nodes["a3"].node, kind="sim"))
    group = group_of_row(model, f"group:n0/{FANOUT}")
    assert group is not None
    pi, claude, sim = await compare(model, group, lambda _node_id: None, NOW)
    kind = dict(FIELDS)["kind"]
    assert kind(sim).startswith("sim (simulated)") and sim.cost.endswith(" pretend")
    assert not claude.cost.endswith("pretend") and kind(claude) == "claude"
    assert (pi.done, pi.ok, pi.diffstat) == (False, False, "no worktree")
    assert (claude.done, claude.ok, claude.checks) == (True, True, "✓ checks")
