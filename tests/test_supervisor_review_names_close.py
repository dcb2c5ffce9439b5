"""Review round 4: reserved node names, and a pause that survives a dead postman or
phase clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import STUCK, hosted, spawn_one

from legion_tui.ops import OpError
from legion_tui.supervisor.core import ROOT_ID, ChildRequest


@pytest.mark.parametrize("name", ["all", "root"])
async def test_all_and_root_are_refused_as_names(tmp_path: Path, name: str) -> None:
    async with hosted(tmp_path) as sup:
        lead = await spawn_one(sup, "centurion", name="lead", sim=dict(STUCK))
        for caller in (ROOT_ID, lead.id):
            with pytest.raises(OpError) as err:
                await sup.spawn(
                    caller,
                    [
                        ChildRequest("worker", "t", name="ok"),
                        ChildRequest("worker", "t", name=name),
                    ],
                )
            assert err.value.code == "BAD_NAME" and "reserved" in err.value.message
        assert sorted(v.node.name for v in sup.model.nodes.values()) == ["lead", "root"]

