"""The run's cost where the user looks (issue 12 item 6): the header's total $ and tokens,
the tree's `$` column when wide, and `legion status` — all the sums of what the sessions
say (real simulated agents on a real host: their sessions carry a cost per turn)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from supervisor_helpers import hosted, settled, spawn_one

from legion_tui.costs import Spend, cost_text, fmt_spend, fmt_usd
from legion_tui.dashboard.app import make_app
from legion_tui.supervisor.hearing.status import render_status
from legion_tui.supervisor.root_ops import RootOperations
from legion_tui.widgets.tree.railway import plan_columns
from legion_tui.widgets.tree.rows import fmt_tokens
from legion_tui.wire.names import ROOT_ID

pytestmark = pytest.mark.host


async def test_header_column_and_status_agree_with_the_sessions_sums(tmp_path: Path) -> None:
    async with hosted(tmp_path) as sup:
        nodes = [await spawn_one(sup, name=f"w{i}") for i in range(2)]
        for node in nodes:
            await settled(sup, node.id)
        views = list(sup.model.nodes.values())
        usd = sum(v.progress.tokens.cost for v in views)
        tokens = sum(v.progress.tokens.input + v.progress.tokens.output for v in views)
        assert usd > 0 and tokens > 0
        app = make_app(sup.model, RootOperations(sup), timers=False, run_dir=sup.run.dir)
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            header = app.header.render_line(0).text
            # (simulated agents: their dollars are pretend, and the header says so)
            assert f" · {fmt_usd(usd)} pretend · {fmt_tokens(tokens)} tok" in header, header
            assert app.railway.columns().cost  # wide enough for the `$` column
            for i, row in enumerate(app.railway.rows):
                cost = sup.model.nodes[row.node_id].progress.tokens.cost
                text = app.railway.render_line(i).text
                shown = re.findall(r"\$\d+\.\d+", text)
                assert shown == ([fmt_usd(cost)] if cost else []), (text, cost)
            assert "$" in app.tree_header.render_line(0).text
            await pilot.resize_terminal(100, 30)  # narrow: no `$` column, the total stays
            await pilot.pause()
            assert not app.railway.columns().cost
            assert fmt_usd(usd) in app.header.render_line(0).text
        doc = sup.queries.status(ROOT_ID)
        # pi's (and the sim's) own figures: nothing estimated, nothing unpriced.
        assert doc["spent"] == {"usd": usd, "tokens": tokens, "estimated": 0, "unpriced": 0}
        for entry in doc["nodes"]:
            assert entry["cost_usd"] == sup.model.nodes[entry["id"]].progress.tokens.cost
        text = render_status(doc)
        assert f"spent {fmt_usd(usd)} · {tokens} tokens" in text.splitlines()[0]
        assert fmt_usd(doc["nodes"][1]["cost_usd"]) in text


def test_the_cost_column_appears_only_when_the_others_all_fit() -> None:
    assert plan_columns(120, 20, 14).cost == 0
    wide = plan_columns(140, 20, 14)
    assert wide.cost and wide.phase and wide.role
    for width in range(10, 240):
        cols = plan_columns(width, 30, 14)
        assert cols.fixed + 16 <= width or cols.fixed == cols.label


def test_a_cost_says_how_it_is_known() -> None:
    """The agent's own figure as it is; the price table's marked `~` (`est.` in the
    detail); a model no table knows `$?`, never $0; a sum with unpriced calls a floor."""
    assert cost_text(0.0123, "reported") == "$0.012"
    assert cost_text(0.0123, "estimated") == "~$0.012"
    assert cost_text(0.0123, "estimated", long=True) == "$0.0123 est."
    assert cost_text(0.0, "unknown") == "$?"
    assert cost_text(0.0, "unknown", long=True) == "$? tokens only"
    assert fmt_spend(Spend(0.5, 10)) == "$0.500"
    assert fmt_spend(Spend(0.5, 10, estimated=1)) == "~$0.500"
    assert fmt_spend(Spend(0.5, 10, estimated=1, unpriced=2)) == "$0.500+?"
    assert fmt_spend(Spend(0.5, 10, pretend=3)) == "$0.500 pretend"  # the demo's dollars
    assert Spend(1, 2, 1, 0) + Spend(1, 2, 0, 1) - Spend(1, 2, 1, 1) == Spend(1, 2, 0, 0)


@pytest.mark.parametrize("reported", [None, 0.0, 0.02, 0.5])
@pytest.mark.parametrize(("estimated", "unpriced"), [(0, 0), (2, 0), (0, 1), (3, 2)])
def test_the_runs_sum_reads_each_session_as_its_own_figures_do(
    reported: float | None, estimated: int, unpriced: int
) -> None:
    """`total_spend` reads the fields behind `SessionProgress.cost` and `.cost_basis`
    (the budget's hot path): for every mix it must say what `spend_of` says."""
    from legion_tui.costs import spend_of, total_spend
    from legion_tui.session.progress import SessionProgress

    sessions = []
    for cost in (0.0, 0.1, 0.3):
        p = SessionProgress(estimated_calls=estimated, unpriced_calls=unpriced,
                            reported_cost=reported)  # fmt: skip
        p.tokens.cost, p.tokens.input, p.tokens.output = cost, 10, 5
        sessions.append(p)
    whole = Spend()
    for p in sessions:
        whole += spend_of(p)
    assert total_spend(sessions) == whole
