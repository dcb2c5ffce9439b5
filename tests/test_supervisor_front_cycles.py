"""The supervisor's front and its socket do not import each other (issue 8): the server
and the dashboard's RootOperations depend on `front.Front`, a Protocol `core.Supervisor`
satisfies; `core` builds them. Every import counts (top, function-level, TYPE_CHECKING),
as `tools/import_cycles.py` counts them."""

from __future__ import annotations

import pytest
from test_import_fences import _import_cycles

pytestmark = pytest.mark.unit

FRONT = {
    "legion_tui.supervisor.core",
    "legion_tui.supervisor.socket.server",
    "legion_tui.supervisor.socket.server_ops",
    "legion_tui.supervisor.socket.dispatch",
    "legion_tui.supervisor.front",
    "legion_tui.supervisor.root_ops",
}


def test_no_import_cycle_runs_through_the_front_or_the_socket() -> None:
    tangled = [cycle for cycle in _import_cycles() if FRONT & set(cycle)]
    assert tangled == []

