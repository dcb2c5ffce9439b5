"""Textual widgets of the dashboard. Line API for everything that can be big.

- `tree.py` / `tree_rows.py` — the railway tree (rows as data, then painted and cached)
- `header.py` — LEGION · run · session · counts · tok/s · stop hint
- `galaxy.py`, `rate_chart.py` — the braille galaxy and the tok/s chart (numpy frames)
- `detail.py` / `detail_text.py` — the detail overlay; `transcript_view.py` (lazy pages),
  `terminal_view.py` (a process child's log through pyte)
- `confirm.py` — the in-place `y` confirm; `steer.py` — the steer and filter lines
- `palette.py` — the Ctrl+P commands; `help.py` — `?`; `layout.py` — size → layout
- `paint.py` — Rich styles per theme, every one on the page floor
"""
