"""Textual widgets of the dashboard. Line API for everything that can be big.

- `tree/` — the railway tree: `rows.py` (rows as data), `railway.py` (painted and
  cached), `header.py` (its dim column titles, cut to the same column plan)
- `header.py` — LEGION · run · session · counts · tok/s · stop hint
- `keys.py` — the agent keys (bound on the screen and in the overlay) and the ranked
  key-hint row at the bottom
- `lines.py` — our strips handed to Textual as they are (`direct_lines`, `PanelStrip`,
  the `PaintedLine` base of the one-line widgets)
- `galaxy.py`, `rate_chart.py` — the braille galaxy and the tok/s chart (numpy frames)
- `overlay/` — the detail overlay of one agent (`detail.py`, its tabs and text, the
  message box, attach)
- `filter_line.py` — the `/` filter line; `confirm.py` — the in-place `y` confirm;
  `new_agent.py` — the `n` form; `landing.py`, `commit_message.py` — commit, land,
  push, discard
- `palette.py` — the Ctrl+P commands; `help.py` — `?`; `layout.py` — size → layout
- `paint.py` — Rich styles per theme, every one on the page floor, and `FollowsTheme`,
  the base every painted widget reads the app's theme through (no theme is handed in)
"""
