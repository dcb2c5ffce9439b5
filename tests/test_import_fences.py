"""The one-way data flow, enforced (issue 8 item 4; ARCHITECTURE "Data flow"): each layer
imports only what is below it. A fresh interpreter imports one module and the test reads
`sys.modules` — a fence crossed by any import chain, however indirect, fails here."""

from __future__ import annotations

import subprocess
import sys

import pytest

# module → packages it must never pull in (by any chain of imports)
FENCES = {
    # The supervisor runs headless (`legion run`, the socket): no dashboard, no terminal UI.
    "legion_tui.supervisor.core": ("textual", "legion_tui.app", "legion_tui.widgets"),
    # Session parsing is pure: no supervisor, no ledger, no UI.
    "legion_tui.session.reader": ("legion_tui.supervisor", "legion_tui.ledger", "textual"),
    "legion_tui.session.transcript": ("legion_tui.supervisor", "textual"),
    # The model the dashboard reads knows nothing of who writes it.
    "legion_tui.state": ("legion_tui.supervisor", "legion_tui.ledger", "textual"),
    # A control verb is a socket request: no UI, no numpy, no SQLite driver thread.
    "legion_tui.commands.agent": ("textual", "numpy", "aiosqlite", "legion_tui.widgets"),
    # The ledger is the only SQL, and speaks to nothing above it.
    "legion_tui.ledger": ("legion_tui.supervisor", "textual", "legion_tui.widgets"),
}


@pytest.mark.parametrize("module", sorted(FENCES))
def test_a_layer_imports_nothing_above_it(module: str) -> None:
    forbidden = FENCES[module]
    probe = (
        f"import sys, {module}\n"
        f"print('\\n'.join(m for m in sys.modules if m.split('.')[0] == 'legion_tui' "
        f"or '.' not in m))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    loaded = set(done.stdout.split())
    crossed = [f for f in forbidden if f in loaded or any(m.startswith(f + ".") for m in loaded)]
    assert crossed == [], f"{module} pulls in {crossed}"
