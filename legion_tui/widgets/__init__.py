"""Textual widgets of the dashboard. Line API for everything that can be big.

- `tree.py` / `tree_rows.py` — the railway tree (rows as data, then painted and cached);
  `tree_header.py` — its dim column titles, cut to the same column plan
- `header.py` — LEGION · run · session · counts · tok/s · stop hint
- `keys.py` — the agent keys (bound on the screen and in the overlay) and the ranked
  key-hint row at the bottom
- `lines.py` — our strips handed to Textual as they are (`direct_lines`, `PanelStrip`,
  the `PaintedLine` base of the one-line widgets)
- `galaxy.py`, `rate_chart.py` — the braille galaxy and the tok/s chart (numpy frames)
- `detail.py` / `detail_text.py` — the detail overlay; `transcript_view.py` (lazy pages),
  `terminal_view.py` (a process child's log through pyte)
- `confirm.py` — the in-place `y` confirm; `steer.py` — the steer and filter lines
- `palette.py` — the Ctrl+P commands; `help.py` — `?`; `layout.py` — size → layout
- `paint.py` — Rich styles per theme, every one on the page floor, and `FollowsTheme`,
  the base every painted widget reads the app's theme through (no theme is handed in)
"""
