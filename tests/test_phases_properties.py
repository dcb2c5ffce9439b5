"""Properties over generated machines: validation never crashes, what validates round-trips,
and `legal_next` agrees with `check_transition` for every phase and target."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legion_tui.model import NodeStatus
from legion_tui.phases import (
    CONDITIONS,
    TERMINALS,
    ChildFact,
    TeamSnapshot,
    validate_machine,
)
from legion_tui.phases.load import machine_from_json

pytestmark = pytest.mark.unit

IDS = ["a", "b", "c", "d"]
conditions = st.lists(st.sampled_from([*CONDITIONS, "bogus"]), max_size=3)
targets = st.sampled_from([*IDS, *TERMINALS, "ghost"])
edge = st.one_of(
    targets,
    st.fixed_dictionaries(
        {"to": targets}, optional={"require": conditions, "rework": st.booleans()}
    ),
)
phase = st.fixed_dictionaries(
    {"id": st.sampled_from([*IDS, "done"])},
    optional={
        "require": conditions,
        "next": st.lists(edge, max_size=3),
        "timeoutMs": st.integers(-1, 5),
    },
)
machines = st.one_of(
    st.lists(phase, max_size=5),
    st.fixed_dictionaries(
        {"phases": st.lists(phase, max_size=5)},
        optional={"start": st.sampled_from([*IDS, "done"]), "maxRework": st.integers(-1, 3)},
    ),
)
good_conditions = st.lists(st.sampled_from(CONDITIONS), max_size=2)


@st.composite
def well_formed(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Unique ids, known conditions, non-empty next naming declared phases or terminals:
    most of these validate, so the transition properties are exercised for real."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=4, unique=True))
    names = [*ids, *TERMINALS]
    out = []
    for phase_id in ids:
        nexts = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        out.append(
            {
                "id": phase_id,
                "require": draw(good_conditions),
                "next": [
                    {"to": to, "require": draw(good_conditions), "rework": draw(st.booleans())}
                    if draw(st.booleans())
                    else to
                    for to in nexts
                ],
            }
        )
    return out


snapshots = st.builds(
    TeamSnapshot,
    rework_count=st.integers(0, 3),
    verification=st.sampled_from([None, "pass", "fail"]),
    contract_path=st.sampled_from([None, "c.md"]),
    contract_size=st.sampled_from([None, 0, 10]),
    children=st.lists(
        st.builds(
            ChildFact,
            name=st.sampled_from(["w-0", "w-1", "w-2"]),
            status=st.sampled_from(list(NodeStatus)),
            verdict_ok=st.sampled_from([None, True, False]),
            handled=st.booleans(),
        ),
        max_size=3,
    ).map(tuple),
)


@settings(max_examples=300)
@given(st.one_of(machines, well_formed()), snapshots)
def test_generated_machines(data: Any, snap: TeamSnapshot) -> None:
    machine, problems = validate_machine(data)
    assert (machine is None) == bool(problems)
    for problem in problems:
        assert problem.path and problem.message
    if machine is None:
        return
    assert machine_from_json(machine.to_json()) == machine
    assert machine.start in machine.phase_ids
    for current in machine.phase_ids:
        for actor in ("self", "parent", "supervisor"):
            legal = machine.legal_next(snap, current, actor=actor)  # type: ignore[arg-type]
            for target in [*machine.phase_ids, *TERMINALS]:
                result = machine.check_transition(
                    snap,
                    current,
                    target,
                    reason="because",
                    actor=actor,  # type: ignore[arg-type]
                )
                assert result.allowed == (target in legal), (current, target, actor)
                if not result.allowed and target != "aborted":
                    assert "Legal next phases from" in result.message
