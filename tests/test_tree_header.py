"""The column-header row: each title sits over its column at every width."""

from __future__ import annotations

import pytest
from app_helpers import canned_app

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("size", [(200, 60), (120, 40), (80, 24), (46, 60)])
async def test_titles_end_where_their_columns_end(size: tuple[int, int]) -> None:
    app = canned_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        header = app.tree_header.render_line(0).text
        root = app.railway.render_line(0).text  # "┬ ● root … 00:15:00   84 tok/s   4.2k …"
        assert len(header) == app.tree_header.size.width
        assert header.startswith("name")
        cols = app.railway.columns()
        for title, cell, shown in (
            ("elapsed", "00:15:00", cols.elapsed),
            ("tok/s", "84 tok/s", cols.rate),
            ("out", "4.2k", cols.tokens),
        ):
            assert (title in header) == bool(shown), (title, size)
            if shown:
                end = header.index(title) + len(title)
                assert root.index(cell) + len(cell) == end, (title, size)
        if cols.role:  # left-aligned columns start together
            assert header.index("role") == cols.label
            assert root[cols.label :].startswith("root ")


async def test_the_header_follows_a_plan_change() -> None:
    app = canned_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        wide = app.tree_header.render_line(0).text
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        narrow = app.tree_header.render_line(0).text
        assert "role" in wide and "role" not in narrow
        assert len(narrow) == app.tree_header.size.width
