"""The tree keeps each row's left columns (rail, glyph, name, role, phase) between the
repaints a live row gets every frame for its clocks and figures (issue 16 item 2): a
change to any of them must still show at once."""

from __future__ import annotations

from dataclasses import replace

import pytest
from app_helpers import FakeOps, canned_model, fixed_clock

from legion_tui.dashboard.app import LegionApp, make_app
from legion_tui.model import NodeStatus
from legion_tui.widgets.tree.rows import GLYPHS

pytestmark = pytest.mark.unit

SIZE = (240, 40)  # the tree pane wide enough to keep its phase column


def row_text(app: LegionApp, node_id: str) -> str:
    row = app.railway.row_of(node_id)
    assert row is not None, f"{node_id} has no row"
    return app.railway.render_line(row).text


async def test_a_rows_left_columns_follow_every_change_to_them() -> None:
    model = canned_model()
    app = make_app(model, FakeOps(model), clock=fixed_clock, timers=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # a live lead: it has a phase column, and children to fold
        nid = next(n for n, v in model.nodes.items() if v.node.live and v.node.phase)
        before = row_text(app, nid)
        assert model.nodes[nid].node.name in before
        changes = [
            {"phase": "verifying"},
            {"role": "scout"},
            {"name": "renamed-w"},
            {"status": NodeStatus.SETTLED},
            {"status": NodeStatus.FAILED},
        ]
        for change in changes:
            model.upsert(replace(model.nodes[nid].node, **change))
            model.flush()
            await pilot.pause()
            text = row_text(app, nid)
            node = model.nodes[nid].node
            assert node.name in text, (change, text)
            assert text.split(node.name)[0].rstrip().endswith(GLYPHS[node.outcome]), text
            assert node.phase in text and f" {node.role} " in text, text
        # the fold count is part of the name column
        app.railway.select(nid)
        await pilot.press("left")
        await pilot.pause()
        assert "renamed-w +" in row_text(app, nid), row_text(app, nid)
